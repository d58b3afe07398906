#include "core/execution/execution_trace.h"

#include <cctype>

namespace hvd {

ExecutionTrace::ExecutionTrace(Timeline* timeline, const char* backend_name)
    : timeline_(timeline), backend_name_(backend_name) {}

void ExecutionTrace::record(const std::vector<const TensorEntry*>& group, const std::string& phase,
                            TimelineClock::time_point from, TimelineClock::time_point to) const {
  for (const TensorEntry* entry : group) timeline_->complete(entry->request.name, phase, from, to);
}

std::string ExecutionTrace::op_event_name(OpType op_type) const {
  std::string name = std::string(backend_name_) + "_" + op_type_name(op_type);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace hvd
