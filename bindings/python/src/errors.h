// hvd::Error and its kinds as Python exceptions, all derived from
// HorovodInternalError (a RuntimeError, as in Horovod). Invalid arguments are
// also ValueErrors and timeouts also TimeoutErrors, so generic handlers work.
#pragma once

#include <pybind11/pybind11.h>

namespace hvdpy {

void bind_errors(pybind11::module_& m);

// Sets the Python error for the C++ exception being handled (call it in a
// catch block) as pybind11's dispatch would: for the functions bound
// without it (fast_call.h).
void set_python_error();

}  // namespace hvdpy
