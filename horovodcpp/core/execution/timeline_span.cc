#include "core/execution/timeline_span.h"

#include "core/diagnostics/nvtx_ranges.h"

namespace hvd {

TimelineSpan::TimelineSpan(Timeline* timeline, const char* name,
                           const std::vector<const TensorEntry*>& group) {
  if (!start(timeline, name)) return;
  rows_.reserve(group.size());
  for (const TensorEntry* entry : group) rows_.push_back(entry->request.name);
}

TimelineSpan::TimelineSpan(Timeline* timeline, const char* name, const TensorEntry& entry) {
  if (start(timeline, name)) rows_.push_back(entry.request.name);
}

bool TimelineSpan::start(Timeline* timeline, const char* name) {
  nvtx_range_ = nvtx_range_start(name);
  if (timeline == nullptr || !timeline->active()) return false;
  timeline_ = timeline;
  name_ = name;
  start_ = TimelineClock::now();
  return true;
}

void TimelineSpan::end() const {
  nvtx_range_end(nvtx_range_);
  if (timeline_ == nullptr) return;
  const TimelineClock::time_point now = TimelineClock::now();
  for (const std::string& row : rows_) timeline_->complete(row, name_, start_, now);
}

}  // namespace hvd
