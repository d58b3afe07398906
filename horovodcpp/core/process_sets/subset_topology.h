// The Topology of a rank inside a process set, from the host of every rank
// of the job: the same rules as the job's own topology, applied to the
// members only (for transports that cannot ask the system, such as Gloo).
#pragma once

#include <string>
#include <vector>

#include "core/negotiation/controller.h"

namespace hvd {

// `hosts[r]` names global rank r's host; `members` are the set's ascending
// global ranks and must include `global_rank`. rank/size: the place among
// the members; local_rank/local_size: among the members on this host (in
// member order); cross_rank/cross_size: among the members with this
// local_rank (one per host that has that many members).
Topology subset_topology(const std::vector<std::string>& hosts, const std::vector<int>& members,
                         int global_rank);

}  // namespace hvd
