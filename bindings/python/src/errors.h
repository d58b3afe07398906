// hvd::Error and its kinds as Python exceptions, all derived from
// HorovodInternalError (a RuntimeError, as in Horovod). Invalid arguments are
// also ValueErrors and timeouts also TimeoutErrors, so generic handlers work.
#pragma once

#include <pybind11/pybind11.h>

namespace hvdpy {

void bind_errors(pybind11::module_& m);

}  // namespace hvdpy
