// GpuEvents: the few CUDA stream/event calls the core needs, behind an
// interface so the core stays free of CUDA headers and its bookkeeping is
// tested with a fake (gpu/cuda_events.cc is the real one).
#pragma once

#include <memory>

namespace hvd {

class GpuEvents {
 public:
  using Event = void*;  // a cudaEvent_t
  virtual ~GpuEvents() = default;
  // A new event recorded on `stream` (a cudaStream_t; null: the legacy
  // default stream) of GPU `device`: it completes when the work queued
  // there so far has.
  virtual Event record(int device, void* stream) = 0;
  // True once the event has completed; never blocks. Throws BackendError
  // if the device reported an error.
  virtual bool done(Event event) = 0;
  // Work queued on `stream` from now on starts after `event` (the host does
  // not wait).
  virtual void stream_wait(int device, void* stream, Event event) = 0;
  virtual void release(Event event) = 0;
};

// An event recorded on `stream` of `device`, released when its last copy
// goes; the copies keep `events` alive (a Work may outlive the device
// operations that recorded its event). Throws as record() does.
inline std::shared_ptr<void> record_shared(const std::shared_ptr<GpuEvents>& events, int device,
                                           void* stream) {
  GpuEvents::Event event = events->record(device, stream);
  return std::shared_ptr<void>(event, [events](void* e) { events->release(e); });
}

}  // namespace hvd
