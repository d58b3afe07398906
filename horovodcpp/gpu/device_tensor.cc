#include "gpu/device_tensor.h"

#include <algorithm>
#include <memory>

#include "gpu/cuda_check.h"

namespace hvd {

Tensor device_tensor(int device, DataType dtype, std::vector<std::int64_t> shape) {
  std::int64_t elements = 1;
  for (std::int64_t dim : shape) elements *= dim;
  const std::size_t bytes = static_cast<std::size_t>(elements) * dtype_size(dtype);
  set_cuda_device(device);
  void* data = nullptr;
  HVD_CUDA_CHECK(cudaMalloc(&data, std::max<std::size_t>(bytes, 1)));
  // Errors at process exit (the runtime already unloaded) are ignored.
  std::shared_ptr<void> storage(data, [](void* p) { cudaFree(p); });
  return Tensor(dtype, std::move(shape), Device::cuda(device), data, std::move(storage));
}

void* StreamBuffer::reserve(std::size_t bytes, void* stream) {
  if (bytes <= capacity_) return data_;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (data_) HVD_CUDA_CHECK(cudaFreeAsync(data_, s));
  data_ = nullptr;
  capacity_ = 0;
  HVD_CUDA_CHECK(cudaMallocAsync(&data_, bytes, s));
  capacity_ = bytes;
  return data_;
}

void StreamBuffer::release(void* stream) {
  if (data_) cudaFreeAsync(data_, static_cast<cudaStream_t>(stream));
  data_ = nullptr;
  capacity_ = 0;
}

}  // namespace hvd
