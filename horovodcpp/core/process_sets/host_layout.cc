#include "core/process_sets/host_layout.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "core/diagnostics/logging.h"

namespace hvd {

bool HostLayout::even() const {
  for (const std::vector<int>& ranks : hosts) {
    if (ranks.size() != hosts.front().size()) return false;
  }
  return true;
}

std::vector<int> HostLayout::cross(int l) const {
  std::vector<int> ranks;
  for (const std::vector<int>& host_ranks : hosts) {
    if (static_cast<int>(host_ranks.size()) > l) ranks.push_back(host_ranks[l]);
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

HostLayout host_layout(const std::vector<std::string>& keys, int rank) {
  HostLayout layout;
  std::map<std::string, int> index;  // key -> host
  for (int r = 0; r < static_cast<int>(keys.size()); ++r) {
    const auto [it, added] = index.emplace(keys[r], static_cast<int>(layout.hosts.size()));
    if (added) layout.hosts.emplace_back();
    std::vector<int>& host = layout.hosts[it->second];
    if (r == rank) {
      layout.host = it->second;
      layout.local = static_cast<int>(host.size());
    }
    host.push_back(r);
  }
  return layout;
}

bool every_rank_can_split_hosts(const HostLayout& layout, Controller& controller,
                                ProcessSetChannel& channel, const char* what) {
  const int local_size = controller.topology().local_size;
  const std::size_t on_my_host = layout.hosts[layout.host].size();
  // Ranks started by hand may have keys that do not match the topology; MPI
  // may lack thread support.
  std::string problem = channel.cannot_create_transports();
  if (on_my_host != static_cast<std::size_t>(local_size)) {
    problem = "the host key says " + std::to_string(on_my_host) +
              " ranks share this host, the topology says " + std::to_string(local_size);
  }
  std::vector<std::uint64_t> able{problem.empty() ? 1u : 0u};
  controller.bitwise_and(able);
  if (!problem.empty()) {
    HVD_LOG(Warning) << what << ": " << problem;
  }
  return able[0] != 0;
}

}  // namespace hvd
