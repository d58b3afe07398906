// How a collective queued on a GPU stream completes its Works: a completion
// event on that stream, each caller's stream made to wait for it (so the
// caller's next kernel needs no host synchronisation), and a
// CompletionPoller that completes the Works once it has happened. Shared by
// the NCCL and the staged device operations; free of CUDA headers.
#pragma once

#include <cstdint>
#include <vector>

#include "core/device/completion_poller.h"
#include "core/device/gpu_events.h"
#include "core/negotiation/tensor_queue.h"
#include "core/diagnostics/timeline_span.h"

namespace hvd {

// Completes `group`'s Works (with `result` as output and `received_splits`,
// if any) once the work queued on `stream` of `device` so far is done, or
// fails them with the poller's error. `span` ends just before the Works
// complete (a caller that stops the timeline once wait() returns finds the
// event), and not at all when they fail. Throws (nothing watched, no event
// left behind) if the event cannot be recorded or waited for.
void complete_when_done(GpuEvents& events, CompletionPoller& poller, int device, void* stream,
                        const std::vector<const TensorEntry*>& group, TimelineSpan span,
                        const Tensor& result = Tensor(),
                        std::vector<std::int64_t> received_splits = {});

}  // namespace hvd
