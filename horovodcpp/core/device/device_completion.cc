#include "core/device/device_completion.h"

#include <utility>

namespace hvd {

void complete_on_stream(const std::shared_ptr<GpuEvents>& events, CompletionPoller& poller,
                        int device, void* stream, const std::vector<const TensorEntry*>& group,
                        TimelineSpan span, const Tensor& result,
                        std::vector<std::int64_t> received_splits) {
  std::shared_ptr<void> done = record_shared(events, device, stream);
  std::vector<std::weak_ptr<detail::WorkState>> works;
  for (const TensorEntry* entry : group) {
    // A joined rank's zeros have no caller whose stream could wait.
    std::function<void()> order_caller;
    if (!entry->joined) {
      order_caller = [events, done, device, caller = entry->input.stream] {
        events->stream_wait(device, caller, done.get());
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
