#include "cpu_tensor_calls.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fast_call.h"
#include "handle_table.h"
#include "horovodcpp/horovodcpp.h"
#include "module.h"
#include "work.h"

namespace hvdpy {
namespace {

// The framework's dtype objects -> hvd::DataType, and its dense layout,
// given once by the front end (set_cpu_tensor_types). Never freed: they
// must not be released after the interpreter has finalised.
PyObject* g_dtype_codes = nullptr;  // dict
PyObject* g_dense_layout = nullptr;

PyObject* interned(const char* text) {
  PyObject* name = PyUnicode_InternFromString(text);
  if (name == nullptr) throw py::error_already_set();
  return name;
}

py::object attribute(PyObject* object, PyObject* name) {
  PyObject* value = PyObject_GetAttr(object, name);
  if (value == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(value);
}

py::object method_result(PyObject* object, PyObject* name) {
  PyObject* value = PyObject_CallMethodNoArgs(object, name);
  if (value == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(value);
}

// `tensor` as a view of its memory, or nothing if it is not a dense
// contiguous CPU tensor of a dtype the core has.
std::optional<hvd::TensorView> cpu_view(PyObject* tensor) {
  static PyObject* const dtype = interned("dtype");
  static PyObject* const is_cpu = interned("is_cpu");
  static PyObject* const layout = interned("layout");
  static PyObject* const is_contiguous = interned("is_contiguous");
  static PyObject* const data_ptr = interned("data_ptr");
  static PyObject* const shape = interned("shape");
  if (g_dtype_codes == nullptr) return std::nullopt;
  PyObject* code = PyDict_GetItemWithError(g_dtype_codes, attribute(tensor, dtype).ptr());
  if (code == nullptr) {
    if (PyErr_Occurred()) throw py::error_already_set();
    return std::nullopt;
  }
  if (attribute(tensor, is_cpu).ptr() != Py_True ||
      attribute(tensor, layout).ptr() != g_dense_layout ||
      method_result(tensor, is_contiguous).ptr() != Py_True) {
    return std::nullopt;
  }
  void* data = PyLong_AsVoidPtr(method_result(tensor, data_ptr).ptr());
  if (data == nullptr && PyErr_Occurred()) throw py::error_already_set();
  const py::object dims = attribute(tensor, shape);
  if (!PyTuple_Check(dims.ptr())) return std::nullopt;
  std::vector<std::int64_t> extents(static_cast<std::size_t>(PyTuple_GET_SIZE(dims.ptr())));
  for (std::size_t i = 0; i < extents.size(); ++i) {
    extents[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(dims.ptr(), i));
    if (extents[i] == -1 && PyErr_Occurred()) throw py::error_already_set();
  }
  return hvd::TensorView(data, static_cast<hvd::DataType>(PyLong_AsLong(code)), std::move(extents));
}

double float_argument(PyObject* value) {
  const double result = PyFloat_AsDouble(value);
  if (result == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  return result;
}

// The arguments both calls take: (input, output, name, op, prescale_factor,
// postscale_factor, process_set). `output` is `input` in place; `name`
// None is unnamed, else the operation's name is "allreduce.<name>";
// process_set None is the global set.
struct Arguments {
  hvd::TensorView input;
  hvd::TensorView output;
  bool in_place;
  std::string name;
  hvd::ReduceOp op;
  double prescale;
  double postscale;
  hvd::ProcessSet set;
};

std::optional<Arguments> read_arguments(const char* function, PyObject* const* args,
                                        Py_ssize_t nargs) {
  expect_arguments(function, nargs, 7);
  std::optional<hvd::TensorView> input = cpu_view(args[0]);
  if (!input) return std::nullopt;
  const bool in_place = args[1] == args[0];
  std::optional<hvd::TensorView> output = in_place ? input : cpu_view(args[1]);
  if (!output) return std::nullopt;
  std::string name;
  if (args[2] != Py_None) {
    name = "allreduce." + py::str(py::reinterpret_borrow<py::object>(args[2])).cast<std::string>();
  }
  hvd::ReduceOp op;
  try {
    op = py::handle(args[3]).cast<hvd::ReduceOp>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(function) + "(): op must be a ReduceOp, got " +
                         py::repr(args[3]).cast<std::string>());
  }
  std::optional<hvd::ProcessSet> set;
  if (args[6] != Py_None) set = py::handle(args[6]).cast<hvd::ProcessSet>();
  return Arguments{
      std::move(*input),       std::move(*output),      in_place,    std::move(name), op,
      float_argument(args[4]), float_argument(args[5]), resolve(set)};
}

py::object not_implemented() { return py::reinterpret_borrow<py::object>(Py_NotImplemented); }

// allreduce_async: a handle of the handle table, which keeps the tensors
// alive and gives the output back once synchronized.
py::object allreduce_async_cpu(PyObject* const* args, Py_ssize_t nargs) {
  std::optional<Arguments> a = read_arguments("allreduce_async_cpu", args, nargs);
  if (!a) return not_implemented();
  release_finished();
  hvd::Work work = a->in_place ? hvd::allreduce_async(a->input, a->name, a->op, a->prescale,
                                                      a->postscale, a->set)
                               : hvd::allreduce_async(a->input, a->output, a->name, a->op,
                                                      a->prescale, a->postscale, a->set);
  return py::int_(add_handle(std::move(work), py::reinterpret_borrow<py::object>(args[0]),
                             py::reinterpret_borrow<py::object>(args[1])));
}

// The blocking allreduce, which runs a lone small allreduce in the caller's
// own cycle; None once done. The tensors are kept for good if it times out
// still in flight, as ops.cc's blocking calls do.
py::object allreduce_cpu(PyObject* const* args, Py_ssize_t nargs) {
  std::optional<Arguments> a = read_arguments("allreduce_cpu", args, nargs);
  if (!a) return not_implemented();
  try {
    py::gil_scoped_release release;
    hvd::allreduce(a->input, a->output, a->name, a->op, a->prescale, a->postscale, a->set);
  } catch (const hvd::Timeout&) {
    keep_for_good(
        std::make_shared<py::object>(py::make_tuple(py::handle(args[0]), py::handle(args[1]))));
    throw;
  }
  return py::none();
}

void set_cpu_tensor_types(py::dict dtype_codes, py::object dense_layout) {
  // Checked here, once, so that cpu_view may cast the codes as they are.
  for (const auto& entry : dtype_codes) {
    const int code = entry.second.cast<int>();
    if (code < 0 || code >= hvd::kNumDataTypes) {
      throw py::value_error("unknown dtype code " + std::to_string(code));
    }
  }
  g_dtype_codes = dtype_codes.release().ptr();
  g_dense_layout = dense_layout.release().ptr();
}

}  // namespace

void bind_cpu_tensor_calls(py::module_& m) {
  m.def("set_cpu_tensor_types", &set_cpu_tensor_types, py::arg("dtype_codes"),
        py::arg("dense_layout"),
        "The front end's dtype objects -> dtype_codes()' codes, and its dense layout object:\n"
        "what allreduce_cpu and allreduce_async_cpu accept.");
  def_fast(m, "allreduce_cpu", &fast_call<allreduce_cpu>,
           "allreduce_cpu(input, output, name, op, prescale_factor, postscale_factor,\n"
           "process_set): the blocking allreduce of dense contiguous CPU tensors (output is\n"
           "input in place; name None or \"allreduce.<name>\"; process_set None: global).\n"
           "None once done; NotImplemented for any other tensor.");
  def_fast(m, "allreduce_async_cpu", &fast_call<allreduce_async_cpu>,
           "allreduce_async_cpu(...): allreduce_cpu's arguments, started: a handle of\n"
           "synchronize_handle, which returns `output`; NotImplemented for any other tensor.");
}

}  // namespace hvdpy
