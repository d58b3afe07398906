// The arithmetic of the hierarchical allreduce of CUDA tensors
// (HOROVODCPP_HIERARCHICAL_ALLREDUCE): when it applies, and how a fused
// buffer is padded and split into one shard per local rank. Pure functions,
// free of CUDA, so they are unit-tested on any machine.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hvd {

// Why the hierarchical allreduce cannot run on hosts holding
// `ranks_per_host[h]` ranks each ("" when it can): it needs more than one
// host and the same number of ranks on every host.
std::string hierarchical_allreduce_problem(const std::vector<std::size_t>& ranks_per_host);

// A buffer of `count` elements padded to a multiple of `local_size`: each
// local rank reduces the `shard` elements at `offset` (= local_rank * shard)
// across hosts. Elements [count, padded) are padding, never read back.
struct ShardPlan {
  std::size_t padded = 0;
  std::size_t shard = 0;
  std::size_t offset = 0;
};
ShardPlan plan_shards(std::size_t count, int local_size, int local_rank);

}  // namespace hvd
