// One kernel launch copies every task of a CopyLaunch: blockIdx.y picks the
// task, the x blocks stride over its elements. Kept to one small file:
// nvcc is the slowest step of the build.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "gpu/batched_copy.h"
#include "gpu/cuda_check.h"

namespace hvd {
namespace {

// element * factor as scale_copy does (Horovod's ScaleBuffer): double for
// double and the integers (truncated toward zero, saturated), float32 for
// float32 and the 16-bit floats (rounded to nearest even).
template <typename T>
struct Scale {
  __device__ static T apply(T v, double factor) {
    if constexpr (std::numeric_limits<T>::is_integer) {
      constexpr double kLow = static_cast<double>(std::numeric_limits<T>::min());
      constexpr double kHigh = static_cast<double>(std::numeric_limits<T>::max());
      const double x = static_cast<double>(v) * factor;
      if (!(x == x)) return 0;  // NaN
      if (x <= kLow) return std::numeric_limits<T>::min();
      if (x >= kHigh) return std::numeric_limits<T>::max();
      return static_cast<T>(x);  // truncates toward zero
    } else if constexpr (std::is_same_v<T, double>) {
      return v * factor;
    } else {
      return v * static_cast<float>(factor);
    }
  }
};
template <>
struct Scale<__half> {
  __device__ static __half apply(__half v, double factor) {
    return __float2half(__half2float(v) * static_cast<float>(factor));
  }
};
template <>
struct Scale<__nv_bfloat16> {
  __device__ static __nv_bfloat16 apply(__nv_bfloat16 v, double factor) {
    return __float2bfloat16(__bfloat162float(v) * static_cast<float>(factor));
  }
};

template <typename T, bool kScale>
__global__ void batched_copy_kernel(CopyLaunch launch, double factor) {
  const CopyTask task = launch.tasks[blockIdx.y];
  const T* src = static_cast<const T*>(task.src);
  T* dst = static_cast<T*>(task.dst);
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < task.count;
       i += stride) {
    if constexpr (kScale) {
      dst[i] = Scale<T>::apply(src[i], factor);
    } else {
      dst[i] = src[i];
    }
  }
}

template <typename T>
void launch_typed(const CopyLaunch& launch, CopyScale scale, cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  constexpr std::uint64_t kMaxBlocks = 1024;  // per task; the blocks then stride
  const std::uint64_t wanted = (launch.max_count + kThreads - 1) / kThreads;
  const dim3 grid(static_cast<unsigned>(wanted < kMaxBlocks ? wanted : kMaxBlocks),
                  static_cast<unsigned>(launch.num_tasks));
  if (scale.identity()) {
    batched_copy_kernel<T, false><<<grid, kThreads, 0, stream>>>(launch, 1.0);
  } else {
    batched_copy_kernel<T, true><<<grid, kThreads, 0, stream>>>(launch, scale.multiplier());
  }
  HVD_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_batched_copy(const CopyLaunch& launch, DataType dtype, CopyScale scale, void* stream) {
  if (launch.num_tasks == 0 || launch.max_count == 0) return;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case DataType::kUInt8: return launch_typed<std::uint8_t>(launch, scale, s);
    case DataType::kInt8: return launch_typed<std::int8_t>(launch, scale, s);
    case DataType::kUInt16: return launch_typed<std::uint16_t>(launch, scale, s);
    case DataType::kInt16: return launch_typed<std::int16_t>(launch, scale, s);
    case DataType::kInt32: return launch_typed<std::int32_t>(launch, scale, s);
    case DataType::kInt64: return launch_typed<std::int64_t>(launch, scale, s);
    case DataType::kFloat16: return launch_typed<__half>(launch, scale, s);
    case DataType::kBFloat16: return launch_typed<__nv_bfloat16>(launch, scale, s);
    case DataType::kFloat32: return launch_typed<float>(launch, scale, s);
    case DataType::kFloat64: return launch_typed<double>(launch, scale, s);
    case DataType::kBool: return launch_typed<std::uint8_t>(launch, CopyScale{}, s);  // as the host
  }
}

void launch_batched_copies(const std::vector<CopyTask>& tasks, DataType dtype, CopyScale scale,
                           void* stream) {
  for (const CopyLaunch& launch : plan_batched_copies(tasks, dtype_size(dtype))) {
    launch_batched_copy(launch, dtype, scale, stream);
  }
}

}  // namespace hvd
