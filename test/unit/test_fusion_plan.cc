// Fusion planning: same-key allreduces share a buffer up to the threshold.
#include <gtest/gtest.h>

#include "core/execution/fusion_plan.h"

namespace hvd {
namespace {

using Groups = std::vector<std::vector<std::size_t>>;

FusionCandidate fusable(const std::string& key, std::size_t bytes) { return {true, key, bytes}; }
FusionCandidate single(std::size_t bytes) { return {false, "", bytes}; }

TEST(FusionPlanTest, SameKeyFusesUpToTheThreshold) {
  auto groups = plan_fusion({fusable("f32", 40), fusable("f32", 40), fusable("f32", 40)}, 100);
  EXPECT_EQ(groups, (Groups{{0, 1}, {2}}));
}

TEST(FusionPlanTest, ExactlyTheThresholdFits) {
  EXPECT_EQ(plan_fusion({fusable("k", 50), fusable("k", 50)}, 100), (Groups{{0, 1}}));
}

TEST(FusionPlanTest, KeysNeverMixAndGroupsKeepFirstMemberOrder) {
  auto groups = plan_fusion(
      {fusable("f32", 8), fusable("f64", 8), fusable("f32", 8), single(8), fusable("f64", 8)}, 64);
  EXPECT_EQ(groups, (Groups{{0, 2}, {1, 4}, {3}}));
}

TEST(FusionPlanTest, OversizedAndUnfusableStandAlone) {
  auto groups =
      plan_fusion({fusable("k", 500), fusable("k", 10), single(1), fusable("k", 10)}, 100);
  EXPECT_EQ(groups, (Groups{{0}, {1, 3}, {2}}));
}

TEST(FusionPlanTest, FullGroupIsReplacedByANewOne) {
  auto groups = plan_fusion({fusable("k", 60), fusable("k", 60), fusable("k", 30)}, 100);
  // The second opens a new group; the third joins the newest open one.
  EXPECT_EQ(groups, (Groups{{0}, {1, 2}}));
}

TEST(FusionPlanTest, ThresholdZeroDisablesFusion) {
  EXPECT_EQ(plan_fusion({fusable("k", 1), fusable("k", 1)}, 0), (Groups{{0}, {1}}));
  EXPECT_TRUE(plan_fusion({}, 100).empty());
}

FusionCandidate grouped(const std::string& group, const std::string& key, std::size_t bytes) {
  return {true, key, bytes, group};
}

TEST(FusionPlanTest, GroupFusesWholeBeyondTheThreshold) {
  auto groups =
      plan_fusion({grouped("g", "f32", 60), grouped("g", "f32", 60), grouped("g", "f32", 60)}, 100);
  EXPECT_EQ(groups, (Groups{{0, 1, 2}}));
  // Even with fusion disabled.
  EXPECT_EQ(plan_fusion({grouped("g", "k", 1), grouped("g", "k", 1)}, 0), (Groups{{0, 1}}));
}

TEST(FusionPlanTest, GroupNeverMixesWithOutsidersOrOtherGroups) {
  auto groups = plan_fusion({fusable("f32", 8), grouped("g", "f32", 8), fusable("f32", 8),
                             grouped("h", "f32", 8), grouped("g", "f32", 8)},
                            64);
  EXPECT_EQ(groups, (Groups{{0, 2}, {1, 4}, {3}}));
}

TEST(FusionPlanTest, GroupMembersWithDifferentKeysSplitByKey) {
  auto groups = plan_fusion(
      {grouped("g", "f32", 8), grouped("g", "f64", 8), grouped("g", "f32", 8), single(4)}, 64);
  EXPECT_EQ(groups, (Groups{{0, 2}, {1}, {3}}));
}

Request allreduce_request(DataType dtype) {
  Request request;
  request.op_type = OpType::kAllreduce;
  request.dtype = dtype;
  request.reduce_op = ReduceOp::kSum;
  return request;
}

Response agreed(OpType op_type) {
  Response response;
  response.op_type = op_type;
  return response;
}

TEST(FusionCandidateTest, OnlyAllreducesWithoutErrorFuse) {
  const Request request = allreduce_request(DataType::kFloat32);
  EXPECT_TRUE(fusion_candidate(agreed(OpType::kAllreduce), request, 4, false).fusable);
  EXPECT_FALSE(fusion_candidate(agreed(OpType::kBroadcast), request, 4, false).fusable);
  Response failed = agreed(OpType::kAllreduce);
  failed.error_kind = ErrorKind::kInvalidArgument;
  EXPECT_FALSE(fusion_candidate(failed, request, 4, false).fusable);
}

TEST(FusionCandidateTest, BytesInTheFusionBuffer) {
  const Request half = allreduce_request(DataType::kFloat16);
  const Response response = agreed(OpType::kAllreduce);
  EXPECT_EQ(fusion_candidate(response, half, 10, false).bytes, 20u);
  EXPECT_EQ(fusion_candidate(response, half, 10, true).bytes, 40u);  // widened to float32
}

TEST(FusionCandidateTest, KeySeparatesWhatMustNotFuse) {
  const Response response = agreed(OpType::kAllreduce);
  const Request base = allreduce_request(DataType::kFloat32);
  const std::string key = fusion_candidate(response, base, 1, false).key;
  Request other = base;
  other.postscale_factor = 0.5;
  EXPECT_NE(fusion_candidate(response, other, 1, false).key, key);
  other = base;
  other.device = Device::cuda(0);
  EXPECT_NE(fusion_candidate(response, other, 1, false).key, key);
  Response joined = response;
  joined.joined_ranks = {1};
  EXPECT_NE(fusion_candidate(joined, base, 1, false).key, key);
  // Ranks use different GPUs: the index stays out of the key.
  Request gpu0 = base, gpu1 = base;
  gpu0.device = Device::cuda(0);
  gpu1.device = Device::cuda(1);
  EXPECT_EQ(fusion_candidate(response, gpu0, 1, false).key,
            fusion_candidate(response, gpu1, 1, false).key);
}

TEST(FusionCandidateTest, AGroupsAllreducesCarryTheirGroup) {
  Request request = allreduce_request(DataType::kFloat32);
  request.group_id = "g7";
  EXPECT_EQ(fusion_candidate(agreed(OpType::kAllreduce), request, 1, false).group, "g7");
}

}  // namespace
}  // namespace hvd
