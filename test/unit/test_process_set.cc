// Process sets' pure pieces: the rank-list rules, how disagreeing calls are
// reported, a member's topology inside a set, and the ProcessSet value.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/process_sets/process_set_rules.h"
#include "core/process_sets/subset_topology.h"
#include "horovodcpp/errors.h"
#include "horovodcpp/process_set.h"

namespace hvd {
namespace {

std::string message_of(const std::vector<int>& ranks, int job_size) {
  try {
    check_process_set_ranks(ranks, job_size);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(ProcessSetRulesTest, AcceptsDistinctRanksOfTheJob) {
  EXPECT_NO_THROW(check_process_set_ranks({0}, 1));
  EXPECT_NO_THROW(check_process_set_ranks({0, 2, 3}, 4));
  EXPECT_EQ(rank_list_str({0, 2, 3}), "[0, 2, 3]");
  EXPECT_EQ(rank_list_str({}), "[]");
}

TEST(ProcessSetRulesTest, RefusesEmptyDuplicateAndOutOfRangeLists) {
  EXPECT_NE(message_of({}, 4).find("at least one rank"), std::string::npos);
  EXPECT_NE(message_of({1, 1, 2}, 4).find("lists rank 1 more than once"), std::string::npos)
      << message_of({1, 1, 2}, 4);
  EXPECT_NE(message_of({0, 4}, 4).find("outside [0, 4)"), std::string::npos)
      << message_of({0, 4}, 4);
  EXPECT_NE(message_of({-1, 0}, 4).find("outside [0, 4)"), std::string::npos);
}

TEST(ProcessSetRulesTest, DisagreementNamesEachCallAndItsRanks) {
  EXPECT_EQ(call_disagreement({"a", "a", "a"}), "");
  EXPECT_EQ(call_disagreement({"x"}), "");
  EXPECT_EQ(call_disagreement({"add([0, 1])", "add([0])", "add([0, 1])"}),
            "add([0, 1]) on ranks 0, 2; add([0]) on rank 1");
}

// Two hosts: a holds global ranks 0, 1, 4; b holds 2, 3.
const std::vector<std::string> kHosts = {"a", "a", "b", "b", "a"};

TEST(SubsetTopologyTest, PlaceAmongMembersOnTheirHosts) {
  const std::vector<int> members = {1, 2, 3, 4};
  // Rank 1: first member on host a, first of the local-rank-0 members.
  Topology t = subset_topology(kHosts, members, 1);
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.size, 4);
  EXPECT_EQ(t.local_rank, 0);
  EXPECT_EQ(t.local_size, 2);
  EXPECT_EQ(t.cross_rank, 0);
  EXPECT_EQ(t.cross_size, 2);
  // Rank 3: second member on host b, so local rank 1; of the local-rank-1
  // members (3 and 4, in rank order) it comes first.
  t = subset_topology(kHosts, members, 3);
  EXPECT_EQ(t.rank, 2);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.local_size, 2);
  EXPECT_EQ(t.cross_rank, 0);
  EXPECT_EQ(t.cross_size, 2);
  t = subset_topology(kHosts, members, 4);
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.cross_rank, 1);
}

TEST(SubsetTopologyTest, UnevenHostsAndNonMembers) {
  // Members 0, 1, 2: two on a, one on b. Rank 1 has local rank 1, which only
  // host a has among the members.
  Topology t = subset_topology(kHosts, {0, 1, 2}, 1);
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.local_size, 2);
  EXPECT_EQ(t.cross_rank, 0);
  EXPECT_EQ(t.cross_size, 1);
  t = subset_topology(kHosts, {0, 1, 2}, 2);
  EXPECT_EQ(t.local_rank, 0);
  EXPECT_EQ(t.local_size, 1);
  EXPECT_EQ(t.cross_rank, 1);
  EXPECT_EQ(t.cross_size, 2);
  EXPECT_THROW(subset_topology(kHosts, {0, 1, 2}, 3), InvalidArgument);
}

TEST(ProcessSetValueTest, DefaultNamesNoSet) {
  const ProcessSet none;
  EXPECT_EQ(none.id(), -1);
  EXPECT_TRUE(none.ranks().empty());
  EXPECT_EQ(none.size(), 0);
  EXPECT_EQ(none.rank(), -1);
  EXPECT_FALSE(none.included());
  EXPECT_EQ(none, ProcessSet());
}

}  // namespace
}  // namespace hvd
