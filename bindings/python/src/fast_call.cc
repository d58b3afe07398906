#include "fast_call.h"

#include <string>

namespace hvdpy {

void def_fast(py::module_& m, const char* name,
              PyObject* (*function)(PyObject*, PyObject* const*, Py_ssize_t), const char* doc) {
  // CPython keeps a pointer to the definition for the function's lifetime.
  auto* definition =
      new PyMethodDef{name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(function)),
                      METH_FASTCALL, doc};
  py::object module_name = m.attr("__name__");
  PyObject* fn = PyCFunction_NewEx(definition, m.ptr(), module_name.ptr());
  if (fn == nullptr) throw py::error_already_set();
  m.add_object(name, py::reinterpret_steal<py::object>(fn));
}

void expect_arguments(const char* name, Py_ssize_t nargs, Py_ssize_t expected) {
  if (nargs != expected) {
    throw py::type_error(std::string(name) + "() takes " + std::to_string(expected) +
                         " positional arguments (" + std::to_string(nargs) + " given)");
  }
}

}  // namespace hvdpy
