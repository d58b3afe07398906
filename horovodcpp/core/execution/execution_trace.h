// ExecutionTrace: the timeline events of collectives run on the CPU
// backend (CPU tensors, staged CUDA tensors): one event per tensor of a
// group, named after the backend ("MPI_ALLREDUCE") or the fusion-buffer
// copy ("MEMCPY_IN_FUSION_BUFFER").
#pragma once

#include <string>
#include <vector>

#include "core/diagnostics/timeline.h"
#include "core/negotiation/message.h"
#include "core/negotiation/tensor_queue.h"

namespace hvd {

class ExecutionTrace {
 public:
  // `timeline` may be null (nothing is recorded); `backend_name`: "mpi", ...
  ExecutionTrace(Timeline* timeline, const char* backend_name);

  // Whether events are being recorded. Ask once per collective and pass the
  // answer on: start/stop may come from another thread.
  bool active() const { return timeline_ && timeline_->active(); }
  // Now when `traced`, else no clock read.
  static TimelineClock::time_point now_if(bool traced) {
    return traced ? TimelineClock::now() : TimelineClock::time_point();
  }

  // One event per tensor of `group`.
  void record(const std::vector<const TensorEntry*>& group, const std::string& phase,
              TimelineClock::time_point from, TimelineClock::time_point to) const;
  // "MPI_ALLREDUCE", "GLOO_BROADCAST", ...
  std::string op_event_name(OpType op_type) const;

 private:
  Timeline* timeline_;
  const char* backend_name_;
};

}  // namespace hvd
