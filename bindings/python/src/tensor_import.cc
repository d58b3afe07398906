#include "tensor_import.h"

#include <dlpack/dlpack.h>

#include <string>
#include <vector>

namespace hvdpy {
namespace {

// DLPack 0.8 added kDLBool; the installed header may predate it.
constexpr std::uint8_t kDLBoolCode = 6;

hvd::DataType dtype_by_name(const std::string& name) {
  for (int i = 0; i < hvd::kNumDataTypes; ++i) {
    auto dtype = static_cast<hvd::DataType>(i);
    if (name == hvd::dtype_name(dtype)) return dtype;
  }
  throw py::value_error("unknown dtype name '" + name + "'");
}

hvd::DataType dtype_from_dlpack(const DLDataType& t) {
  if (t.lanes == 1) {
    switch (t.code) {
      case kDLInt:
        if (t.bits == 8) return hvd::DataType::kInt8;
        if (t.bits == 16) return hvd::DataType::kInt16;
        if (t.bits == 32) return hvd::DataType::kInt32;
        if (t.bits == 64) return hvd::DataType::kInt64;
        break;
      case kDLUInt:
        if (t.bits == 8) return hvd::DataType::kUInt8;
        if (t.bits == 16) return hvd::DataType::kUInt16;
        break;
      case kDLFloat:
        if (t.bits == 16) return hvd::DataType::kFloat16;
        if (t.bits == 32) return hvd::DataType::kFloat32;
        if (t.bits == 64) return hvd::DataType::kFloat64;
        break;
      case kDLBfloat:
        if (t.bits == 16) return hvd::DataType::kBFloat16;
        break;
      case kDLBoolCode:
        if (t.bits == 8) return hvd::DataType::kBool;
        break;
    }
  }
  throw py::value_error("unsupported tensor dtype (DLPack code " + std::to_string(t.code) + ", " +
                        std::to_string(t.bits) + " bits, " + std::to_string(t.lanes) + " lanes)");
}

hvd::Device device_from_dlpack(const DLDevice& device) {
  switch (device.device_type) {
    case kDLCPU:
    case kDLCUDAHost: return hvd::Device::cpu();
    case kDLCUDA: return hvd::Device::cuda(device.device_id);
    default:
      throw py::value_error("unsupported tensor device (DLPack device type " +
                            std::to_string(device.device_type) + ")");
  }
}

// Row-major and dense; dimensions of size 1 may have any stride, and so
// may every dimension of an empty tensor.
bool is_contiguous(const std::vector<std::int64_t>& shape, const std::int64_t* strides) {
  for (std::int64_t dim : shape) {
    if (dim == 0) return true;
  }
  std::int64_t expected = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

ImportedTensor import_dlpack(py::handle obj) {
  py::object capsule = py::reinterpret_borrow<py::object>(obj);
  if (!PyCapsule_CheckExact(obj.ptr())) capsule = obj.attr("__dlpack__")();
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) throw py::error_already_set();  // e.g. a consumed capsule
  // The consumer owns the tensor from here on: renaming tells the capsule's
  // destructor not to free it.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  std::shared_ptr<DLManagedTensor> keep(managed, [](DLManagedTensor* m) {
    if (m->deleter) m->deleter(m);
  });
  const DLTensor& t = managed->dl_tensor;
  std::vector<std::int64_t> shape(t.shape, t.shape + t.ndim);
  if (t.strides && !is_contiguous(shape, t.strides)) {
    throw py::value_error("tensor is not contiguous; call .contiguous() first");
  }
  ImportedTensor result;
  result.view =
      hvd::TensorView(static_cast<char*>(t.data) + t.byte_offset, dtype_from_dlpack(t.dtype),
                      std::move(shape), device_from_dlpack(t.device));
  result.keep = std::move(keep);
  return result;
}

hvd::DataType dtype_from_format(std::string format, py::ssize_t itemsize) {
  if (!format.empty() && std::string("@=<").find(format[0]) != std::string::npos) {
    format.erase(0, 1);  // native or little-endian byte order
  }
  if (format.size() == 1) {
    const char c = format[0];
    if (c == '?') return hvd::DataType::kBool;
    if (c == 'e') return hvd::DataType::kFloat16;
    if (c == 'f') return hvd::DataType::kFloat32;
    if (c == 'd') return hvd::DataType::kFloat64;
    if (std::string("bhilq").find(c) != std::string::npos) {
      if (itemsize == 1) return hvd::DataType::kInt8;
      if (itemsize == 2) return hvd::DataType::kInt16;
      if (itemsize == 4) return hvd::DataType::kInt32;
      if (itemsize == 8) return hvd::DataType::kInt64;
    }
    if (c == 'B') return hvd::DataType::kUInt8;
    if (c == 'H') return hvd::DataType::kUInt16;
  }
  throw py::value_error("unsupported buffer format '" + format + "'");
}

ImportedTensor import_buffer(py::handle obj, bool writable) {
  if (!PyObject_CheckBuffer(obj.ptr())) {
    throw py::type_error(std::string("expected a tensor (DLPack or buffer protocol), got ") +
                         Py_TYPE(obj.ptr())->tp_name);
  }
  auto info =
      std::make_shared<py::buffer_info>(py::reinterpret_borrow<py::buffer>(obj).request(writable));
  std::vector<std::int64_t> shape(info->shape.begin(), info->shape.end());
  std::vector<std::int64_t> strides;
  for (py::ssize_t stride : info->strides) {
    if (stride % info->itemsize != 0) throw py::value_error("buffer strides are not whole items");
    strides.push_back(stride / info->itemsize);
  }
  if (!is_contiguous(shape, strides.data())) {
    throw py::value_error("buffer is not C-contiguous");
  }
  ImportedTensor result;
  result.view =
      hvd::TensorView(info->ptr, dtype_from_format(info->format, info->itemsize), std::move(shape));
  result.keep = std::move(info);
  return result;
}

}  // namespace

ImportedTensor import_tensor(py::handle obj, bool writable) {
  if (py::isinstance<py::tuple>(obj)) {
    auto pair = py::reinterpret_borrow<py::tuple>(obj);
    if (pair.size() != 2) throw py::value_error("expected (tensor, dtype name)");
    ImportedTensor result = import_tensor(pair[0], writable);
    const hvd::DataType dtype = dtype_by_name(pair[1].cast<std::string>());
    if (hvd::dtype_size(dtype) != hvd::dtype_size(result.view.dtype)) {
      throw py::value_error(std::string("cannot view ") + hvd::dtype_name(result.view.dtype) +
                            " as " + hvd::dtype_name(dtype) + ": element sizes differ");
    }
    result.view.dtype = dtype;
    return result;
  }
  if (PyCapsule_CheckExact(obj.ptr()) || py::hasattr(obj, "__dlpack__")) return import_dlpack(obj);
  return import_buffer(obj, writable);
}

}  // namespace hvdpy
