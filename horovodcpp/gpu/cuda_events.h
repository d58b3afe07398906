// CudaEvents: GpuEvents on the CUDA runtime.
#pragma once

#include "core/gpu_events.h"

namespace hvd {

class CudaEvents : public GpuEvents {
 public:
  Event record(int device, void* stream) override;
  bool done(Event event) override;
  void stream_wait(int device, void* stream, Event event) override;
  void release(Event event) override;
};

// Number of visible CUDA devices; 0 when there is no driver or no device
// (never throws; asked once per process).
int cuda_device_count();

}  // namespace hvd
