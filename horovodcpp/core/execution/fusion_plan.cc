#include "core/execution/fusion_plan.h"

#include <sstream>
#include <unordered_map>

namespace hvd {
namespace {

// Allreduces of equal keys may share the fusion buffer. Only what every rank
// sees alike goes in: the device type, not its index (ranks may use
// different GPUs, and a joined rank's zeros carry the template's device).
std::string fusion_key(const Request& r, const Response& response) {
  std::ostringstream key;
  key << int(r.dtype) << '/' << int(r.reduce_op) << '/' << r.prescale_factor << '/'
      << r.postscale_factor << '/' << int(r.device.type) << '/' << response.joined_ranks.size();
  return key.str();
}

}  // namespace

FusionCandidate fusion_candidate(const Response& response, const Request& request,
                                 std::size_t elements, bool staged_in_float32) {
  FusionCandidate c;
  c.fusable = response.op_type == OpType::kAllreduce && response.error_kind == ErrorKind::kNone;
  if (!c.fusable) return c;
  c.key = fusion_key(request, response);
  c.bytes = elements * (staged_in_float32 ? sizeof(float) : dtype_size(request.dtype));
  c.group = request.group_id;  // a group's allreduces fuse together
  return c;
}

std::vector<std::vector<std::size_t>> plan_fusion(const std::vector<FusionCandidate>& candidates,
                                                  std::size_t threshold) {
  std::vector<std::vector<std::size_t>> groups;
  std::vector<std::size_t> group_bytes;
  std::unordered_map<std::string, std::size_t> open_group;  // key -> index in groups
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const FusionCandidate& c = candidates[i];
    if (c.fusable && !c.group.empty()) {
      // Keys cannot collide with ungrouped ones: those never contain '\0'.
      const std::string key = c.group + '\0' + c.key;
      auto it = open_group.find(key);
      if (it != open_group.end()) {
        groups[it->second].push_back(i);
        group_bytes[it->second] += c.bytes;
        continue;
      }
      open_group[key] = groups.size();
    } else if (c.fusable && threshold > 0) {
      auto it = open_group.find(c.key);
      if (it != open_group.end() && group_bytes[it->second] + c.bytes <= threshold) {
        groups[it->second].push_back(i);
        group_bytes[it->second] += c.bytes;
        continue;
      }
      open_group[c.key] = groups.size();
    }
    groups.push_back({i});
    group_bytes.push_back(c.bytes);
  }
  return groups;
}

}  // namespace hvd
