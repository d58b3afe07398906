// How a collective queued on a GPU stream completes its Works: a completion
// event on that stream; the Works complete at once (wait() returns, and
// makes the caller's stream wait for the event, so the caller's next kernel
// needs no host synchronisation), and a CompletionPoller finishes them once
// the GPU has run it. Shared by the NCCL and the staged device operations;
// free of CUDA headers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/device/completion_poller.h"
#include "core/device/gpu_events.h"
#include "core/execution/timeline_span.h"
#include "core/negotiation/tensor_queue.h"

namespace hvd {

// Completes `group`'s Works (with `result` as output and `received_splits`,
// if any) with what was queued on `stream` of `device` so far, and finishes
// them once that has run, or fails them with the poller's error. `span`
// ends just before they finish (a caller that stops the timeline once
// poll() is true finds the event), and not at all when they fail. Throws
// (nothing completed) if the event cannot be recorded. The poller holds the
// Works weakly: it never frees a result the caller dropped (cudaFree would
// wait for the GPU, and hold up the poller's timeouts behind a stuck kernel).
void complete_on_stream(const std::shared_ptr<GpuEvents>& events, CompletionPoller& poller,
                        int device, void* stream, const std::vector<const TensorEntry*>& group,
                        TimelineSpan span, const Tensor& result = Tensor(),
                        std::vector<std::int64_t> received_splits = {});

}  // namespace hvd
