#include "core/execution/hierarchical_allreduce_plan.h"

#include "base/check.h"

namespace hvd {

std::string hierarchical_allreduce_problem(const std::vector<std::size_t>& ranks_per_host) {
  if (ranks_per_host.size() < 2) return "the job runs on one host";
  for (std::size_t ranks : ranks_per_host) {
    if (ranks != ranks_per_host.front()) {
      return "the hosts hold different numbers of ranks (" +
             std::to_string(ranks_per_host.front()) + " and " + std::to_string(ranks) + ")";
    }
  }
  return "";
}

ShardPlan plan_shards(std::size_t count, int local_size, int local_rank) {
  HVD_CHECK(local_size > 0 && local_rank >= 0 && local_rank < local_size, InvalidArgument,
            "local rank " << local_rank << " of " << local_size);
  const std::size_t ranks = static_cast<std::size_t>(local_size);
  ShardPlan plan;
  plan.shard = (count + ranks - 1) / ranks;
  plan.padded = plan.shard * ranks;
  plan.offset = plan.shard * static_cast<std::size_t>(local_rank);
  return plan;
}

}  // namespace hvd
