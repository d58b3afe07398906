#include "core/execution/fusion_plan.h"

#include <unordered_map>

namespace hvd {
namespace {

// Allreduces of equal keys may share the fusion buffer. Only what every rank
// sees alike goes in: the device type, not its index (ranks may use
// different GPUs, and a joined rank's zeros carry the template's device).
// Binary, not text: formatting the doubles cost more than the rest of a
// small allreduce's planning.
std::string fusion_key(const Request& r, const Response& response) {
  std::string key;
  const auto append = [&key](const auto& value) {
    key.append(reinterpret_cast<const char*>(&value), sizeof value);
  };
  append(r.dtype);
  append(r.reduce_op);
  append(r.prescale_factor);
  append(r.postscale_factor);
  append(r.device.type);
  append(response.joined_ranks.size());
  return key;
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
      // Longer than any ungrouped key (those are of one fixed length).
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
