#include "tensor_export.h"

#include <dlpack/dlpack.h>
#include <pybind11/stl.h>

#include <vector>

namespace hvdpy {
namespace {

DLDataType dlpack_dtype(hvd::DataType dtype) {
  const auto bits = static_cast<std::uint8_t>(8 * hvd::dtype_size(dtype));
  switch (dtype) {
    case hvd::DataType::kInt8:
    case hvd::DataType::kInt16:
    case hvd::DataType::kInt32:
    case hvd::DataType::kInt64: return {kDLInt, bits, 1};
    case hvd::DataType::kFloat16:
    case hvd::DataType::kFloat32:
    case hvd::DataType::kFloat64: return {kDLFloat, bits, 1};
    case hvd::DataType::kBFloat16: return {kDLBfloat, bits, 1};
    default: return {kDLUInt, bits, 1};  // uint8, uint16, bool (see Buffer::dlpack)
  }
}

// What a capsule owns: a reference to the storage, the shape, the tensor.
struct Export {
  hvd::Tensor tensor;
  std::vector<std::int64_t> shape;
  DLManagedTensor managed{};
};

void capsule_destructor(PyObject* capsule) {
  // Still named "dltensor": nobody consumed it, so it is ours to free.
  if (auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"))) {
    m->deleter(m);
  } else {
    PyErr_Clear();
  }
}

DLDevice dlpack_device(const hvd::Tensor& tensor) {
  const hvd::Device device = tensor.device();
  if (device.type == hvd::DeviceType::kCUDA) return {kDLCUDA, device.index};
  return {kDLCPU, 0};
}

}  // namespace

py::capsule Buffer::dlpack() const {
  auto* e = new Export{tensor_, tensor_.shape(), {}};
  DLTensor& t = e->managed.dl_tensor;
  t.data = e->tensor.data();
  t.device = dlpack_device(tensor_);
  t.ndim = static_cast<std::int32_t>(e->shape.size());
  t.dtype = dlpack_dtype(tensor_.dtype());
  t.shape = e->shape.data();
  t.strides = nullptr;  // compact row-major
  t.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = [](DLManagedTensor* m) { delete static_cast<Export*>(m->manager_ctx); };
  PyObject* capsule = PyCapsule_New(&e->managed, "dltensor", capsule_destructor);
  if (capsule == nullptr) {
    delete e;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

void bind_buffer(py::module_& m) {
  py::class_<Buffer>(m, "Buffer",
                     "A result tensor allocated by horovodcpp, exported through DLPack.")
      // A CUDA result is complete once its Work is (the Work's wait comes
      // first), so the consumer's stream needs no ordering: `stream` is unused.
      .def(
          "__dlpack__", [](const Buffer& b, py::object /*stream*/) { return b.dlpack(); },
          py::arg("stream") = py::none())
      .def("__dlpack_device__",
           [](const Buffer& b) {
             const DLDevice device = dlpack_device(b.tensor());
             return py::make_tuple(static_cast<int>(device.device_type), device.device_id);
           })
      .def_property_readonly("shape", [](const Buffer& b) { return b.tensor().shape(); })
      .def_property_readonly("dtype",
                             [](const Buffer& b) { return hvd::dtype_name(b.tensor().dtype()); });
}

}  // namespace hvdpy
