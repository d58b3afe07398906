// The hosts of a job, for the backends that split it into per-host and
// cross-host sub-transports (the two-level CPU backend, NCCL's
// hierarchical allreduce).
#pragma once

#include <string>
#include <vector>

#include "core/negotiation/controller.h"
#include "core/process_sets/process_set_channel.h"

namespace hvd {

// The hosts of a job, from a key per global rank (ProcessSetChannel::host_keys).
struct HostLayout {
  // Each host's global ranks, ascending; hosts in the order of their lowest rank.
  std::vector<std::vector<int>> hosts;
  int host = 0;   // this rank's host
  int local = 0;  // this rank's index among its host's ranks
  // Every host has the same number of ranks.
  bool even() const;
  // The ranks with index `l` on their host, ascending (hosts with more than l ranks).
  std::vector<int> cross(int l) const;
};
HostLayout host_layout(const std::vector<std::string>& keys, int rank);

// Collective over every rank of the job: true on every rank if every rank
// can build sub-transports over `layout` (its host key agrees with its
// topology, and `channel` can create transports). A rank that cannot logs
// why, after `what` ("hierarchical allreduce is not possible").
bool every_rank_can_split_hosts(const HostLayout& layout, Controller& controller,
                                ProcessSetChannel& channel, const char* what);

}  // namespace hvd
