#include "errors.h"

#include <string>

#include "horovodcpp/errors.h"

namespace hvdpy {
namespace {

namespace py = pybind11;

// Created once per process; the module keeps a reference for its lifetime.
PyObject* new_exception(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  const std::string qualified = std::string("horovodcpp._core.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

}  // namespace

void bind_errors(py::module_& m) {
  static PyObject* base = new_exception(m, "HorovodInternalError", PyExc_RuntimeError,
                                        "A collective failed (base of every horovodcpp error).");
  static PyObject* invalid =
      new_exception(m, "InvalidArgumentError",
                    py::make_tuple(py::handle(base), py::handle(PyExc_ValueError)).ptr(),
                    "The call itself is wrong: bad shape, dtype, op, not initialized.");
  static PyObject* mismatch = new_exception(
      m, "MismatchError", base, "Ranks submitted the same tensor name with different arguments.");
  static PyObject* timeout =
      new_exception(m, "HorovodTimeoutError",
                    py::make_tuple(py::handle(base), py::handle(PyExc_TimeoutError)).ptr(),
                    "A wait with a timeout expired; the operation is still in flight.");
  static PyObject* rank_failure = new_exception(
      m, "RankFailureError", base, "A rank failed or shut down before the operation completed.");
  static PyObject* backend =
      new_exception(m, "BackendError", base, "The communication library reported an error.");

  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const hvd::InvalidArgument& e) {
      PyErr_SetString(invalid, e.what());
    } catch (const hvd::Mismatch& e) {
      PyErr_SetString(mismatch, e.what());
    } catch (const hvd::Timeout& e) {
      PyErr_SetString(timeout, e.what());
    } catch (const hvd::RankFailure& e) {
      PyErr_SetString(rank_failure, e.what());
    } catch (const hvd::BackendError& e) {
      PyErr_SetString(backend, e.what());
    } catch (const hvd::Error& e) {
      PyErr_SetString(base, e.what());
    }
  });
}

}  // namespace hvdpy
