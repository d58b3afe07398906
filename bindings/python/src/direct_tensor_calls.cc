#include "direct_tensor_calls.h"

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

// The framework's dtype objects -> hvd::DataType, its dense layout, and a
// function of a device index that returns its current CUDA stream (None:
// CUDA tensors take the DLPack path), given once by the front end
// (set_direct_tensor_types). Never freed: they must not be released after
// the interpreter has finalised.
PyObject* g_dtype_codes = nullptr;  // dict
PyObject* g_dense_layout = nullptr;
PyObject* g_cuda_stream = nullptr;

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

// The device of `tensor` and the stream a CUDA tensor's collective is
// ordered after (its device's current one), or nothing for a device the
// direct path does not take.
std::optional<std::pair<hvd::Device, void*>> device_of(PyObject* tensor, bool accept_cuda) {
  static PyObject* const is_cpu = interned("is_cpu");
  static PyObject* const is_cuda = interned("is_cuda");
  static PyObject* const get_device = interned("get_device");
  if (attribute(tensor, is_cpu).ptr() == Py_True) {
    return std::make_pair(hvd::Device::cpu(), nullptr);
  }
  if (!accept_cuda || g_cuda_stream == nullptr || attribute(tensor, is_cuda).ptr() != Py_True) {
    return std::nullopt;
  }
  const py::object index = method_result(tensor, get_device);
  const long device = PyLong_AsLong(index.ptr());
  if (device == -1 && PyErr_Occurred()) throw py::error_already_set();
  PyObject* stream = PyObject_CallFunctionObjArgs(g_cuda_stream, index.ptr(), nullptr);
  if (stream == nullptr) throw py::error_already_set();
  void* handle = PyLong_AsVoidPtr(py::reinterpret_steal<py::object>(stream).ptr());
  if (handle == nullptr && PyErr_Occurred()) throw py::error_already_set();
  return std::make_pair(hvd::Device::cuda(static_cast<int>(device)), handle);
}

// `tensor` as a view of its memory, or nothing if it is not a dense
// contiguous tensor of a dtype the core has, in host memory (or on a GPU
// where `accept_cuda`).
std::optional<hvd::TensorView> direct_view(PyObject* tensor, bool accept_cuda) {
  static PyObject* const dtype = interned("dtype");
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
  if (attribute(tensor, layout).ptr() != g_dense_layout ||
      method_result(tensor, is_contiguous).ptr() != Py_True) {
    return std::nullopt;
  }
  const auto device = device_of(tensor, accept_cuda);
  if (!device) return std::nullopt;
  void* data = PyLong_AsVoidPtr(method_result(tensor, data_ptr).ptr());
  if (data == nullptr && PyErr_Occurred()) throw py::error_already_set();
  const py::object dims = attribute(tensor, shape);
  if (!PyTuple_Check(dims.ptr())) return std::nullopt;
  std::vector<std::int64_t> extents(static_cast<std::size_t>(PyTuple_GET_SIZE(dims.ptr())));
  for (std::size_t i = 0; i < extents.size(); ++i) {
    extents[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(dims.ptr(), i));
    if (extents[i] == -1 && PyErr_Occurred()) throw py::error_already_set();
  }
  hvd::TensorView view(data, static_cast<hvd::DataType>(PyLong_AsLong(code)), std::move(extents),
                       device->first);
  view.stream = device->second;
  return view;
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
                                        Py_ssize_t nargs, bool accept_cuda) {
  expect_arguments(function, nargs, 7);
  std::optional<hvd::TensorView> input = direct_view(args[0], accept_cuda);
  if (!input) return std::nullopt;
  const bool in_place = args[1] == args[0];
  std::optional<hvd::TensorView> output = in_place ? input : direct_view(args[1], accept_cuda);
  if (!output || output->device != input->device) return std::nullopt;
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

// allreduce_async of CPU or CUDA tensors: a handle of the handle table,
// which keeps the tensors alive and gives the output back once synchronized.
py::object allreduce_async_direct(PyObject* const* args, Py_ssize_t nargs) {
  std::optional<Arguments> a =
      read_arguments("allreduce_async_direct", args, nargs, /*accept_cuda=*/true);
  if (!a) return not_implemented();
  release_finished();
  hvd::Work work = a->in_place ? hvd::allreduce_async(a->input, a->name, a->op, a->prescale,
                                                      a->postscale, a->set)
                               : hvd::allreduce_async(a->input, a->output, a->name, a->op,
                                                      a->prescale, a->postscale, a->set);
  return py::int_(add_handle(std::move(work), py::reinterpret_borrow<py::object>(args[0]),
                             py::reinterpret_borrow<py::object>(args[1])));
}

// The blocking allreduce of CPU tensors, which runs a lone small allreduce
// in the caller's own cycle; None once done. The tensors are kept for good
// if it times out still in flight, as ops.cc's blocking calls do.
py::object allreduce_direct(PyObject* const* args, Py_ssize_t nargs) {
  std::optional<Arguments> a =
      read_arguments("allreduce_direct", args, nargs, /*accept_cuda=*/false);
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

void set_direct_tensor_types(py::dict dtype_codes, py::object dense_layout,
                             py::object cuda_stream) {
  // Checked here, once, so that direct_view may cast the codes as they are.
  for (const auto& entry : dtype_codes) {
    const int code = entry.second.cast<int>();
    if (code < 0 || code >= hvd::kNumDataTypes) {
      throw py::value_error("unknown dtype code " + std::to_string(code));
    }
  }
  g_dtype_codes = dtype_codes.release().ptr();
  g_dense_layout = dense_layout.release().ptr();
  g_cuda_stream = cuda_stream.is_none() ? nullptr : cuda_stream.release().ptr();
}

}  // namespace

void bind_direct_tensor_calls(py::module_& m) {
  m.def("set_direct_tensor_types", &set_direct_tensor_types, py::arg("dtype_codes"),
        py::arg("dense_layout"), py::arg("cuda_stream"),
        "The front end's dtype objects -> dtype_codes()' codes, its dense layout object, and\n"
        "a function of a device index that returns its current CUDA stream as an integer\n"
        "(None: no CUDA tensors): what allreduce_direct and allreduce_async_direct accept.");
  def_fast(m, "allreduce_direct", &fast_call<allreduce_direct>,
           "allreduce_direct(input, output, name, op, prescale_factor, postscale_factor,\n"
           "process_set): the blocking allreduce of dense contiguous CPU tensors (output is\n"
           "input in place; name None or \"allreduce.<name>\"; process_set None: global).\n"
           "None once done; NotImplemented for any other tensor.");
  def_fast(m, "allreduce_async_direct", &fast_call<allreduce_async_direct>,
           "allreduce_async_direct(...): allreduce_direct's arguments, started, for dense\n"
           "contiguous CPU or CUDA tensors (on one device; CUDA after its current stream): a\n"
           "handle of synchronize_handle, which returns `output`; NotImplemented for any other\n"
           "tensor.");
}

}  // namespace hvdpy
