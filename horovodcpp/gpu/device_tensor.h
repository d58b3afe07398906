// Results the library allocates for CUDA tensors (allgather, alltoall,
// reducescatter): device memory owned by a Tensor. And the device scratch
// buffers the collectives reuse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "horovodcpp/tensor.h"

namespace hvd {

// A Tensor of `shape` in new memory on GPU `device` (cudaMalloc), freed
// with cudaFree when its last copy goes: cudaFree waits for the device, so
// work still queued on any stream that uses it finishes first. Throws
// BackendError if the memory cannot be allocated.
Tensor device_tensor(int device, DataType dtype, std::vector<std::int64_t> shape);

// Device memory kept and reused, allocated and freed in the order of one
// stream (cudaMallocAsync / cudaFreeAsync on the current device): growing
// frees the old memory after the work already queued there that uses it,
// and the host never waits. The owner calls release() before it goes.
class StreamBuffer {
 public:
  // At least `bytes` (exactly `bytes` when it grows). Throws BackendError.
  void* reserve(std::size_t bytes, void* stream);
  std::size_t capacity() const { return capacity_; }
  // Frees after the work queued on `stream`; never throws.
  void release(void* stream);

 private:
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace hvd
