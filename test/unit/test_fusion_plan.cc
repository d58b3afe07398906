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
  auto groups = plan_fusion({fusable("k", 500), fusable("k", 10), single(1), fusable("k", 10)}, 100);
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
  auto groups = plan_fusion({grouped("g", "f32", 60), grouped("g", "f32", 60),
                             grouped("g", "f32", 60)},
                            100);
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
  auto groups = plan_fusion({grouped("g", "f32", 8), grouped("g", "f64", 8),
                             grouped("g", "f32", 8), single(4)},
                            64);
  EXPECT_EQ(groups, (Groups{{0, 2}, {1}, {3}}));
}

}  // namespace
}  // namespace hvd
