// HVD_CUDA_CHECK: each CUDA runtime call wrapped once; a failure throws
// BackendError naming the call and CUDA's message. set_cuda_device names
// the GPU it could not select.
#pragma once

#include <cuda_runtime_api.h>

#include "base/check.h"

#define HVD_CUDA_CHECK(call)                                                  \
  do {                                                                        \
    const cudaError_t hvd_cuda_status_ = (call);                              \
    HVD_CHECK(hvd_cuda_status_ == cudaSuccess, ::hvd::BackendError,           \
              #call " failed: " << cudaGetErrorName(hvd_cuda_status_) << ": " \
                                << cudaGetErrorString(hvd_cuda_status_));     \
  } while (0)

namespace hvd {

inline void set_cuda_device(int device) {
  const cudaError_t status = cudaSetDevice(device);
  HVD_CHECK(status == cudaSuccess, BackendError,
            "cudaSetDevice(" << device << ") failed: " << cudaGetErrorName(status) << ": "
                             << cudaGetErrorString(status));
}

}  // namespace hvd
