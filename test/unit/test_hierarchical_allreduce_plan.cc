// The hierarchical allreduce of CUDA tensors: when it applies, and the
// padding and shards of a fused buffer (core/execution/hierarchical_allreduce_plan.h).
#include <gtest/gtest.h>

#include <vector>

#include "base/check.h"
#include "core/execution/hierarchical_allreduce_plan.h"

namespace hvd {
namespace {

TEST(HierarchicalAllreduce, AppliesToSeveralEvenHosts) {
  EXPECT_EQ(hierarchical_allreduce_problem({2, 2}), "");
  EXPECT_EQ(hierarchical_allreduce_problem({1, 1, 1}), "");
  EXPECT_EQ(hierarchical_allreduce_problem({8, 8, 8, 8}), "");
}

TEST(HierarchicalAllreduce, NotOnOneHostOrUnevenHosts) {
  EXPECT_NE(hierarchical_allreduce_problem({}).find("one host"), std::string::npos);
  EXPECT_NE(hierarchical_allreduce_problem({4}).find("one host"), std::string::npos);
  EXPECT_NE(hierarchical_allreduce_problem({2, 1}).find("different numbers"), std::string::npos);
  EXPECT_NE(hierarchical_allreduce_problem({2, 2, 3}).find("2 and 3"), std::string::npos);
}

TEST(HierarchicalAllreduce, ShardsCoverThePaddedBuffer) {
  for (int local_size : {1, 2, 3, 4, 8}) {
    for (std::size_t count : {0, 1, 2, 3, 7, 8, 9, 1000, 1001}) {
      std::size_t next = 0;
      for (int l = 0; l < local_size; ++l) {
        const ShardPlan plan = plan_shards(count, local_size, l);
        EXPECT_EQ(plan.padded % static_cast<std::size_t>(local_size), 0u);
        EXPECT_GE(plan.padded, count);
        EXPECT_LT(plan.padded - count, static_cast<std::size_t>(local_size));
        EXPECT_EQ(plan.shard * static_cast<std::size_t>(local_size), plan.padded);
        EXPECT_EQ(plan.offset, next) << count << " " << local_size << " " << l;
        next += plan.shard;
      }
      EXPECT_EQ(next, plan_shards(count, local_size, 0).padded);
    }
  }
}

TEST(HierarchicalAllreduce, ShardExamples) {
  const ShardPlan plan = plan_shards(10, 4, 3);
  EXPECT_EQ(plan.padded, 12u);
  EXPECT_EQ(plan.shard, 3u);
  EXPECT_EQ(plan.offset, 9u);  // the last shard is part data (9), part padding (10, 11)
  EXPECT_EQ(plan_shards(8, 4, 1).padded, 8u);  // no padding when it divides
  EXPECT_EQ(plan_shards(0, 2, 1).shard, 0u);
}

TEST(HierarchicalAllreduce, BadLocalRankThrows) {
  EXPECT_THROW(plan_shards(4, 0, 0), InvalidArgument);
  EXPECT_THROW(plan_shards(4, 2, 2), InvalidArgument);
  EXPECT_THROW(plan_shards(4, 2, -1), InvalidArgument);
}

}  // namespace
}  // namespace hvd
