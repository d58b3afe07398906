// Results the library allocates for CUDA tensors (allgather, alltoall,
// reducescatter): device memory owned by a Tensor.
#pragma once

#include <cstdint>
#include <vector>

#include "horovodcpp/tensor.h"

namespace hvd {

// A Tensor of `shape` in new memory on GPU `device` (cudaMalloc), freed
// with cudaFree when its last copy goes: cudaFree waits for the device, so
// work still queued on any stream that uses it finishes first. Throws
// BackendError if the memory cannot be allocated.
Tensor device_tensor(int device, DataType dtype, std::vector<std::int64_t> shape);

}  // namespace hvd
