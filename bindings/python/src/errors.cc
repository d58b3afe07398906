#include "errors.h"

#include <string>

#include "horovodcpp/errors.h"

namespace hvdpy {
namespace {

namespace py = pybind11;

// The Python exception types, created once per process by bind_errors (the
// module keeps a reference for its lifetime).
struct ExceptionTypes {
  PyObject* base;
  PyObject* invalid;
  PyObject* mismatch;
  PyObject* timeout;
  PyObject* rank_failure;
  PyObject* backend;
};
ExceptionTypes g_types;

PyObject* new_exception(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  const std::string qualified = std::string("horovodcpp._core.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

// hvd::Error and its kinds as their Python exceptions; others fall through.
void translate_hvd_error(std::exception_ptr error) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const hvd::InvalidArgument& e) {
    PyErr_SetString(g_types.invalid, e.what());
  } catch (const hvd::Mismatch& e) {
    PyErr_SetString(g_types.mismatch, e.what());
  } catch (const hvd::Timeout& e) {
    PyErr_SetString(g_types.timeout, e.what());
  } catch (const hvd::RankFailure& e) {
    PyErr_SetString(g_types.rank_failure, e.what());
  } catch (const hvd::BackendError& e) {
    PyErr_SetString(g_types.backend, e.what());
  } catch (const hvd::Error& e) {
    PyErr_SetString(g_types.base, e.what());
  }
}

}  // namespace

void bind_errors(py::module_& m) {
  PyObject* base = new_exception(m, "HorovodInternalError", PyExc_RuntimeError,
                                 "A collective failed (base of every horovodcpp error).");
  g_types = ExceptionTypes{
      base,
      new_exception(m, "InvalidArgumentError",
                    py::make_tuple(py::handle(base), py::handle(PyExc_ValueError)).ptr(),
                    "The call itself is wrong: bad shape, dtype, op, not initialized."),
      new_exception(m, "MismatchError", base,
                    "Ranks submitted the same tensor name with different arguments."),
      new_exception(m, "HorovodTimeoutError",
                    py::make_tuple(py::handle(base), py::handle(PyExc_TimeoutError)).ptr(),
                    "A wait with a timeout expired; the operation is still in flight."),
      new_exception(m, "RankFailureError", base,
                    "A rank failed or shut down before the operation completed."),
      new_exception(m, "BackendError", base, "The communication library reported an error."),
  };
  py::register_exception_translator(&translate_hvd_error);
}

void set_python_error() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const hvd::Error&) {
    translate_hvd_error(std::current_exception());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
  }
}

}  // namespace hvdpy
