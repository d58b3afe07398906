// One kernel launch copies every task of a CopyLaunch: blockIdx.y picks the
// task, the x blocks stride over its elements. Kept to one small file:
// nvcc is the slowest step of the build.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <limits>

#include "gpu/batched_copy.h"
#include "gpu/cuda_check.h"

namespace hvd {
namespace {

// Element <-> double, rounding once on the way back (as scale_copy).
template <typename T>
struct Convert {
  __device__ static double load(T v) { return static_cast<double>(v); }
  __device__ static T store(double v) {
    if constexpr (std::numeric_limits<T>::is_integer) {
      constexpr double kLow = static_cast<double>(std::numeric_limits<T>::min());
      constexpr double kHigh = static_cast<double>(std::numeric_limits<T>::max());
      if (!(v == v)) return 0;  // NaN
      if (v <= kLow) return std::numeric_limits<T>::min();
      if (v >= kHigh) return std::numeric_limits<T>::max();
      return static_cast<T>(v);  // truncates toward zero
    } else {
      return static_cast<T>(v);
    }
  }
};
template <>
struct Convert<__half> {
  __device__ static double load(__half v) { return __half2float(v); }
  __device__ static __half store(double v) { return __double2half(v); }
};
template <>
struct Convert<__nv_bfloat16> {
  __device__ static double load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(double v) { return __double2bfloat16(v); }
};

template <typename T, bool kScale>
__global__ void batched_copy_kernel(CopyLaunch launch, double divisor, double factor) {
  const CopyTask task = launch.tasks[blockIdx.y];
  const T* src = static_cast<const T*>(task.src);
  T* dst = static_cast<T*>(task.dst);
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < task.count;
       i += stride) {
    if constexpr (kScale) {
      double v = Convert<T>::load(src[i]) / divisor;
      if constexpr (std::numeric_limits<T>::is_integer) v = trunc(v);  // integer division first
      dst[i] = Convert<T>::store(v * factor);
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
    batched_copy_kernel<T, false><<<grid, kThreads, 0, stream>>>(launch, 1.0, 1.0);
  } else {
    batched_copy_kernel<T, true><<<grid, kThreads, 0, stream>>>(launch, scale.divisor,
                                                                 scale.factor);
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
