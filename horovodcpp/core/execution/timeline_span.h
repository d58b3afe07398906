// TimelineSpan: one timeline event per tensor of a group for work that
// outlives the call queueing it, such as a collective on a GPU stream:
// started where the coordinator queues the work, ended where its end is
// observed (on the CompletionPoller's thread for GPU work: the end is when
// the host saw the completion event done, within the poller's interval).
// The same interval is an NVTX range of the phase's name (nvtx_ranges.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/diagnostics/timeline.h"
#include "core/negotiation/tensor_queue.h"

namespace hvd {

class TimelineSpan {
 public:
  TimelineSpan() = default;  // records nothing
  // Starts now if `timeline` (may be null) is recording, else records
  // nothing and costs nothing; the NVTX range starts if ranges are on.
  // `name`: a string literal ("NCCL_ALLREDUCE").
  TimelineSpan(Timeline* timeline, const char* name, const std::vector<const TensorEntry*>& group);
  TimelineSpan(Timeline* timeline, const char* name, const TensorEntry& entry);

  // One event per tensor (its row), from the start to now, and the end of
  // the NVTX range. Any thread, once.
  void end() const;

 private:
  bool start(Timeline* timeline, const char* name);

  Timeline* timeline_ = nullptr;  // null: not recording
  const char* name_ = "";
  std::vector<std::string> rows_;  // copied: the entries are gone by the end
  TimelineClock::time_point start_;
  std::uint64_t nvtx_range_ = 0;
};

}  // namespace hvd
