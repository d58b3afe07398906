// CudaEvents: GpuEvents on the CUDA runtime.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/device/gpu_events.h"

namespace hvd {

class CudaEvents : public GpuEvents {
 public:
  CudaEvents() = default;
  ~CudaEvents() override;
  CudaEvents(const CudaEvents&) = delete;
  CudaEvents& operator=(const CudaEvents&) = delete;

  Event record(int device, void* stream) override;
  // Also makes the GPU of the recorded events current on the calling (the
  // poller's) thread, for its CUDA and NCCL calls and the Works' callbacks.
  bool done(Event event) override;
  void stream_wait(int device, void* stream, Event event) override;
  // Keeps the event for a later record() (up to kMaxPooled).
  void release(Event event) override;

 private:
  struct Pooled {
    Event event;
    int device;
  };
  static constexpr std::size_t kMaxPooled = 4096;

  std::atomic<int> device_{-1};  // of the last recorded event: one GPU per rank
  std::mutex pool_mutex_;
  std::vector<Pooled> pool_;                  // released, ready for reuse
  std::unordered_map<Event, int> device_of_;  // recorded: the device of each
};

// Number of visible CUDA devices; 0 when there is no driver or no device
// (never throws; asked once per process).
int cuda_device_count();

}  // namespace hvd
