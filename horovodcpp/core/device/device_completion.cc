#include "core/device/device_completion.h"

#include <memory>
#include <utility>

namespace hvd {

void complete_when_done(GpuEvents& events, CompletionPoller& poller, int device, void* stream,
                        const std::vector<const TensorEntry*>& group, TimelineSpan span,
                        const Tensor& result, std::vector<std::int64_t> received_splits) {
  GpuEvents::Event done = events.record(device, stream);
  std::vector<std::shared_ptr<detail::WorkState>> works;
  try {
    for (const TensorEntry* entry : group) {
      // The caller's next kernel on its stream runs after the result is in
      // (a joined rank's zeros have no caller).
      if (!entry->joined) events.stream_wait(device, entry->input.stream, done);
      works.push_back(entry->work);
    }
  } catch (...) {
    events.release(done);
    throw;
  }
  poller.watch(done, [works = std::move(works), result, splits = std::move(received_splits),
                      span = std::move(span)](std::exception_ptr error) {
    if (!error) span.end();
    for (const auto& work : works) {
      if (error) {
        work->fail(error);
      } else {
        work->complete(result, splits);
      }
    }
  });
}

}  // namespace hvd
