// Helpers of the GPU suites: device detection, device buffers, and a
// fixture that skips when there is no CUDA device.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu/cuda_check.h"
#include "gpu/cuda_events.h"

namespace hvd {
namespace test {

constexpr int kAllSkippedExitCode = 77;  // SKIP_RETURN_CODE in test/CMakeLists.txt

// Why the GPU tests cannot run here, or "" when a device is visible.
inline std::string no_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device: cudaGetDeviceCount failed: ") + cudaGetErrorString(status);
  }
  return count == 0 ? "no CUDA device: cudaGetDeviceCount returned 0" : "";
}

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = no_device_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
    HVD_CUDA_CHECK(cudaSetDevice(0));
  }
};

// Device memory holding a copy of a host vector, freed on scope exit.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    HVD_CUDA_CHECK(cudaMalloc(&data_, std::max<std::size_t>(1, count) * sizeof(T)));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    HVD_CUDA_CHECK(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    // From pageable memory cudaMemcpy may return before the data lands, and
    // the collectives read it on non-blocking streams, unordered with it.
    HVD_CUDA_CHECK(cudaDeviceSynchronize());
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() { return static_cast<T*>(data_); }
  std::vector<T> to_host() const {
    std::vector<T> host(count_);
    HVD_CUDA_CHECK(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  void* data_ = nullptr;
  std::size_t count_;
};

}  // namespace test
}  // namespace hvd
