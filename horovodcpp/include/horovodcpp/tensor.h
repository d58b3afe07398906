// TensorView: a non-owning view of caller memory. Tensor: memory the
// library allocated for a result (allgather output).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "horovodcpp/export.h"
#include "horovodcpp/types.h"

namespace hvd {

// A dense, row-major (contiguous) tensor in caller-owned memory.
struct HVD_EXPORT TensorView {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  std::vector<std::int64_t> shape;  // empty shape: a scalar
  Device device;
  // CUDA tensors only: the cudaStream_t (as void*, so this header needs no
  // CUDA) that produced the data; null is the legacy default stream.
  // horovodcpp orders its reads after the work queued there so far, and
  // orders the stream's later work after the result: no host
  // synchronisation is needed on either side. Ignored for CPU tensors.
  void* stream = nullptr;

  TensorView() = default;
  TensorView(void* data, DataType dtype, std::vector<std::int64_t> shape,
             Device device = Device::cpu())
      : data(data), dtype(dtype), shape(std::move(shape)), device(device) {}

  std::int64_t num_elements() const;
  std::size_t size_bytes() const;
};

// A view of a typed buffer: view(vec.data(), {rows, cols}).
template <typename T>
TensorView view(T* data, std::vector<std::int64_t> shape) {
  return TensorView(data, dtype_of<T>(), std::move(shape));
}
template <typename T>
TensorView view(std::vector<T>& values) {
  return TensorView(values.data(), dtype_of<T>(), {static_cast<std::int64_t>(values.size())});
}

// A tensor that owns its memory (shared between copies of the Tensor): host
// memory the library allocated, or, for results of collectives on CUDA
// tensors, device memory on `device()` (not readable from the host).
class HVD_EXPORT Tensor {
 public:
  Tensor() = default;
  Tensor(DataType dtype, std::vector<std::int64_t> shape);  // host memory
  // Memory allocated elsewhere: `storage` holds `data` (e.g. device memory
  // whose deleter frees it) and lives as long as any copy of the Tensor.
  Tensor(DataType dtype, std::vector<std::int64_t> shape, Device device, void* data,
         std::shared_ptr<void> storage);

  DataType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  Device device() const { return device_; }
  std::int64_t num_elements() const;
  std::size_t size_bytes() const;
  void* data() { return data_; }
  const void* data() const { return data_; }
  template <typename T>
  T* data_as() {
    return static_cast<T*>(data());
  }
  template <typename T>
  const T* data_as() const {
    return static_cast<const T*>(data());
  }
  TensorView view();

 private:
  DataType dtype_ = DataType::kFloat32;
  std::vector<std::int64_t> shape_;
  Device device_;
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
};

// "[2, 3]"
HVD_EXPORT std::string shape_str(const std::vector<std::int64_t>& shape);

}  // namespace hvd
