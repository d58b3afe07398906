#include "core/device/device_completion.h"

#include <atomic>
#include <map>
#include <utility>

namespace hvd {

void complete_on_stream(const std::shared_ptr<GpuEvents>& events, CompletionPoller& poller,
                        int device, void* stream, const std::vector<const TensorEntry*>& group,
                        TimelineSpan span, const Tensor& result,
                        std::vector<std::int64_t> received_splits) {
  std::shared_ptr<void> done = record_shared(events, device, stream);
  std::vector<std::weak_ptr<detail::WorkState>> works;
  // One wait per caller's stream: the gradients of a fused group share
  // their stream, and once it waits for the event, waiting again adds a
  // CUDA call per tensor and orders nothing more. Set once a wait has
  // succeeded, so that a failed one is tried again by the next.
  std::map<void*, std::shared_ptr<std::atomic<bool>>> ordered;
  for (const TensorEntry* entry : group) {
    // A joined rank's zeros have no caller whose stream could wait.
    std::function<void()> order_caller;
    if (!entry->joined) {
      std::shared_ptr<std::atomic<bool>>& stream_ordered = ordered[entry->input.stream];
      if (!stream_ordered) stream_ordered = std::make_shared<std::atomic<bool>>(false);
      order_caller = [events, done, device, caller = entry->input.stream,
                      already = stream_ordered] {
        if (already->load()) return;
        events->stream_wait(device, caller, done.get());
        already->store(true);
      };
    }
    entry->work->complete_on_device(std::move(order_caller), result, received_splits);
    works.push_back(entry->work);
  }
  poller.watch(std::move(done),
               [works = std::move(works), span = std::move(span)](std::exception_ptr error) {
                 if (!error) span.end();
                 for (const auto& weak : works) {
                   if (auto work = weak.lock()) work->finish_on_device(error);
                 }
               });
}

}  // namespace hvd
