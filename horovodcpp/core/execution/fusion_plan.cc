#include "core/execution/fusion_plan.h"

#include <unordered_map>

namespace hvd {

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
