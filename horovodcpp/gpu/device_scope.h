// The calling thread's current CUDA device, kept across a scope: the GPU
// work of a collective may be queued from a user thread that waits for it
// (Coordinator::help) or that submits a tensor, whose current device must
// stay its own.
#pragma once

#include <cuda_runtime.h>

#include "gpu/cuda_check.h"

namespace hvd {

// Restores the current device of the scope's start when it ends.
class KeepCurrentDevice {
 public:
  KeepCurrentDevice() {
    if (cudaGetDevice(&device_) != cudaSuccess) {
      cudaGetLastError();  // no device: nothing to restore
      device_ = -1;
    }
  }
  ~KeepCurrentDevice() {
    int now = -1;
    if (device_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != device_) {
      cudaSetDevice(device_);
    }
  }
  KeepCurrentDevice(const KeepCurrentDevice&) = delete;
  KeepCurrentDevice& operator=(const KeepCurrentDevice&) = delete;

 private:
  int device_ = -1;
};

// Makes `device` current for the scope (then restores the previous one).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    HVD_CUDA_CHECK(cudaGetDevice(&previous_));
    if (device != previous_) set_cuda_device(device);
    changed_ = device != previous_;
  }
  ~DeviceScope() {
    if (changed_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

}  // namespace hvd
