// CudaEvents: GpuEvents on the CUDA runtime.
#pragma once

#include <atomic>

#include "core/device/gpu_events.h"

namespace hvd {

class CudaEvents : public GpuEvents {
 public:
  Event record(int device, void* stream) override;
  // Also makes the GPU of the recorded events current on the calling (the
  // poller's) thread, for its CUDA and NCCL calls and the Works' callbacks.
  bool done(Event event) override;
  void stream_wait(int device, void* stream, Event event) override;
  void release(Event event) override;

 private:
  std::atomic<int> device_{-1};  // of the last recorded event: one GPU per rank
};

// Number of visible CUDA devices; 0 when there is no driver or no device
// (never throws; asked once per process).
int cuda_device_count();

}  // namespace hvd
