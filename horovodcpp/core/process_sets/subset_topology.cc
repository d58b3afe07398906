#include "core/process_sets/subset_topology.h"

#include <algorithm>
#include <map>

#include "base/check.h"

namespace hvd {

Topology subset_topology(const std::vector<std::string>& hosts, const std::vector<int>& members,
                         int global_rank) {
  const auto me = std::lower_bound(members.begin(), members.end(), global_rank);
  HVD_CHECK(me != members.end() && *me == global_rank, InvalidArgument,
            "rank " << global_rank << " is not a member of the process set");
  // Each member's local rank: how many members of its host come before it.
  std::map<std::string, int> seen_on_host;
  std::vector<int> local_rank_of(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) {
    local_rank_of[i] = seen_on_host[hosts.at(static_cast<std::size_t>(members[i]))]++;
  }
  const std::size_t mine = static_cast<std::size_t>(me - members.begin());
  Topology topology;
  topology.rank = static_cast<int>(mine);
  topology.size = static_cast<int>(members.size());
  topology.local_rank = local_rank_of[mine];
  topology.local_size = seen_on_host[hosts.at(static_cast<std::size_t>(global_rank))];
  topology.cross_rank = 0;
  topology.cross_size = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (local_rank_of[i] != topology.local_rank) continue;
    if (i < mine) ++topology.cross_rank;
    ++topology.cross_size;
  }
  return topology;
}

}  // namespace hvd
