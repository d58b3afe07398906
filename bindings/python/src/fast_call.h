// Functions bound as CPython fast calls (METH_FASTCALL), without pybind11's
// dispatch, which costs about 0.3 us a call with several arguments: for the
// few calls horovodcpp.torch makes once per tensor of a training step. A
// body takes the positional arguments and returns the result; its C++
// exceptions become Python errors as in pybind11's functions.
#pragma once

#include <pybind11/pybind11.h>

#include "errors.h"

namespace hvdpy {

namespace py = pybind11;

using FastBody = py::object (*)(PyObject* const* args, Py_ssize_t nargs);

template <FastBody body>
PyObject* fast_call(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  try {
    return body(args, nargs).release().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

// m.<name> = the fast call `function` (fast_call<body>); the body checks
// its argument count (expect_arguments).
void def_fast(py::module_& m, const char* name,
              PyObject* (*function)(PyObject*, PyObject* const*, Py_ssize_t), const char* doc);

// TypeError unless a fast call got `expected` arguments.
void expect_arguments(const char* name, Py_ssize_t nargs, Py_ssize_t expected);

}  // namespace hvdpy
