// The stall inspector: rank 0's warnings about tensors some ranks have not
// submitted, and the error that shuts the job down. Time is passed
// explicitly: nothing here sleeps.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/negotiation/message_table.h"
#include "core/negotiation/stall_inspector.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);

PendingTensor pending(const std::string& name, std::vector<int> submitted,
                      Clock::time_point first_seen = t0, OpType op = OpType::kAllreduce) {
  PendingTensor t;
  t.name = name;
  t.op_type = op;
  t.submitted_ranks = std::move(submitted);
  t.first_seen = first_seen;
  return t;
}

Request request(int rank, const std::string& name) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.shape = {2};
  return r;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

StallInspector inspector(double check, double shutdown) {
  StallSettings settings;
  settings.check_seconds = check;
  settings.shutdown_seconds = shutdown;
  return StallInspector(settings);
}

// ---- settings ----------------------------------------------------------------

class StallSettingsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name :
         {"HOROVODCPP_STALL_CHECK_TIME_SECONDS", "HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS",
          "HOROVOD_STALL_CHECK_TIME_SECONDS", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS",
          "HOROVODCPP_STALL_CHECK_DISABLE", "HOROVOD_STALL_CHECK_DISABLE"}) {
      unsetenv(name);
    }
  }
};

TEST_F(StallSettingsTest, DefaultsWarnAfterAMinuteAndShutDownAfterTenMinutes) {
  StallSettings settings = StallSettings::from_env();
  EXPECT_EQ(settings.check_seconds, 60);
  EXPECT_EQ(settings.shutdown_seconds, 600);
}

TEST_F(StallSettingsTest, ReadFromEnvironmentWithHorovodAliases) {
  setenv("HOROVODCPP_STALL_CHECK_TIME_SECONDS", "1.5", 1);
  setenv("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "0", 1);
  StallSettings settings = StallSettings::from_env();
  EXPECT_EQ(settings.check_seconds, 1.5);
  EXPECT_EQ(settings.shutdown_seconds, 0);
}

// Horovod's HOROVOD_STALL_CHECK_DISABLE: a number > 0 turns off the warnings
// and the shutdown, whatever their times say.
TEST_F(StallSettingsTest, CheckDisableTurnsOffWarningsAndShutdown) {
  setenv("HOROVODCPP_STALL_CHECK_TIME_SECONDS", "5", 1);
  setenv("HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS", "10", 1);
  setenv("HOROVOD_STALL_CHECK_DISABLE", "1", 1);
  StallSettings settings = StallSettings::from_env();
  EXPECT_EQ(settings.check_seconds, 0);
  EXPECT_EQ(settings.shutdown_seconds, 0);
  setenv("HOROVOD_STALL_CHECK_DISABLE", "0", 1);
  settings = StallSettings::from_env();
  EXPECT_EQ(settings.check_seconds, 5);
  EXPECT_EQ(settings.shutdown_seconds, 10);
}

TEST_F(StallSettingsTest, NegativeOrMalformedIsInvalid) {
  setenv("HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS", "-1", 1);
  EXPECT_THROW(StallSettings::from_env(), InvalidArgument);
  setenv("HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS", "10min", 1);
  EXPECT_THROW(StallSettings::from_env(), InvalidArgument);
}

// ---- the table's view --------------------------------------------------------

TEST(MessageTablePendingTest, FirstSeenAndSubmittedRanksUntilComplete) {
  MessageTable table(3);
  table.add(request(2, "w"), t0);
  table.add(request(0, "w"), t0 + seconds(5));
  table.add(request(1, "b"), t0 + seconds(7));
  auto view = table.pending_tensors();
  ASSERT_EQ(view.size(), 2u);
  if (view[0].name != "w") std::swap(view[0], view[1]);
  EXPECT_EQ(view[0].name, "w");
  EXPECT_EQ(view[0].op_type, OpType::kAllreduce);
  EXPECT_EQ(view[0].submitted_ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(view[0].first_seen, t0);  // the first rank's time
  EXPECT_EQ(view[1].first_seen, t0 + seconds(7));

  table.add(request(1, "w"), t0 + seconds(9));
  EXPECT_EQ(table.take_ready().size(), 1u);
  view = table.pending_tensors();
  ASSERT_EQ(view.size(), 1u);
  EXPECT_EQ(view[0].name, "b");

  // Submitted again later: a fresh first-seen time.
  table.add(request(0, "w"), t0 + seconds(100));
  view = table.pending_tensors();
  ASSERT_EQ(view.size(), 2u);
  for (const auto& t : view) {
    if (t.name == "w") EXPECT_EQ(t.first_seen, t0 + seconds(100));
  }
}

// ---- warnings ----------------------------------------------------------------

TEST(StallInspectorTest, NoWarningBeforeTheCheckTime) {
  auto stall = inspector(60, 600);
  auto report = stall.check({pending("grad.w", {0, 2})}, 3, t0 + seconds(59));
  EXPECT_TRUE(report.warnings.empty());
  EXPECT_TRUE(report.error.empty());
}

TEST(StallInspectorTest, WarningNamesTensorOpSubmittersAndMissingRanks) {
  auto stall = inspector(60, 600);
  auto report = stall.check({pending("grad.w", {0, 2})}, 3, t0 + milliseconds(61500));
  ASSERT_EQ(report.warnings.size(), 2u);
  EXPECT_EQ(report.warnings[0],
            "stalled for 61 s: tensor 'grad.w' (allreduce) submitted by ranks 0, 2; "
            "missing on rank 1");
  EXPECT_TRUE(contains(report.warnings[1], "600 s")) << report.warnings[1];
  EXPECT_TRUE(contains(report.warnings[1], "HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS"));
  EXPECT_TRUE(report.error.empty());
}

TEST(StallInspectorTest, JoinedRanksAreNotMissing) {
  auto stall = inspector(60, 600);
  PendingTensor tensor = pending("grad.w", {0});
  tensor.joined_ranks = {2};
  auto report = stall.check({tensor}, 3, t0 + milliseconds(61500));
  ASSERT_FALSE(report.warnings.empty());
  EXPECT_TRUE(contains(report.warnings[0], "missing on rank 1")) << report.warnings[0];
  EXPECT_FALSE(contains(report.warnings[0], "2")) << report.warnings[0];
}

TEST(StallInspectorTest, WarnsOncePerTensorPerCheckInterval) {
  auto stall = inspector(60, 0);
  std::vector<PendingTensor> list = {pending("a", {0})};
  EXPECT_FALSE(stall.check(list, 2, t0 + seconds(60)).warnings.empty());
  EXPECT_TRUE(stall.check(list, 2, t0 + seconds(61)).warnings.empty());
  EXPECT_TRUE(stall.check(list, 2, t0 + seconds(119)).warnings.empty());
  // A tensor newly stalled is reported while "a" stays quiet.
  list.push_back(pending("b", {1}, t0 + seconds(60)));
  auto report = stall.check(list, 2, t0 + seconds(120));
  std::string all;
  for (const std::string& line : report.warnings) all += line + "\n";
  EXPECT_TRUE(contains(all, "tensor 'b' (allreduce) submitted by rank 1; missing on rank 0"))
      << all;
  EXPECT_TRUE(contains(all, "stalled for 120 s: tensor 'a'")) << "a is due again at 120 s: " << all;
  EXPECT_TRUE(stall.check(list, 2, t0 + seconds(150)).warnings.empty());
}

TEST(StallInspectorTest, GroupsTensorsMissingOnTheSameRanksAndCapsNames) {
  auto stall = inspector(10, 0);
  std::vector<PendingTensor> list;
  for (int i = 0; i < 8; ++i) {
    list.push_back(pending("g" + std::to_string(i), {0, 1, 2}, t0 + seconds(i)));
  }
  list.push_back(pending("bcast", {1, 2, 3}, t0, OpType::kBroadcast));
  auto report = stall.check(list, 4, t0 + seconds(30));
  ASSERT_EQ(report.warnings.size(), 3u);  // two groups and the hint
  // Oldest first; "bcast" and "g0" have the same age, "bcast" is missing on rank 0.
  std::string missing3 =
      contains(report.warnings[0], "missing on rank 3") ? report.warnings[0] : report.warnings[1];
  std::string missing0 =
      contains(report.warnings[0], "missing on rank 0") ? report.warnings[0] : report.warnings[1];
  EXPECT_EQ(missing3,
            "stalled for up to 30 s: 8 tensors 'g0' (allreduce), 'g1' (allreduce), "
            "'g2' (allreduce), 'g3' (allreduce), 'g4' (allreduce) and 3 more submitted by "
            "ranks 0-2; missing on rank 3");
  EXPECT_EQ(missing0,
            "stalled for 30 s: tensor 'bcast' (broadcast) submitted by ranks 1-3; "
            "missing on rank 0");
}

TEST(StallInspectorTest, CapsTheNumberOfLines) {
  auto stall = inspector(1, 0);
  std::vector<PendingTensor> list;
  const int size = 20;
  for (int rank = 0; rank < size; ++rank) {
    list.push_back(pending("only." + std::to_string(rank), {rank}));  // 20 groups
  }
  auto report = stall.check(list, size, t0 + seconds(5));
  ASSERT_EQ(report.warnings.size(), 10u);  // 8 groups, "... and 12 more", the hint
  EXPECT_TRUE(contains(report.warnings[8], "12 more")) << report.warnings[8];
  // Equal ages: groups in the order of their missing ranks.
  EXPECT_EQ(report.warnings[0],
            "stalled for 5 s: tensor 'only.19' (allreduce) submitted by rank 19; "
            "missing on ranks 0-18");
}

TEST(StallInspectorTest, LongRankListsAreCompressedAndCapped) {
  auto stall = inspector(1, 0);
  std::vector<int> every_other;
  for (int rank = 0; rank < 100; rank += 2) every_other.push_back(rank);
  auto report = stall.check({pending("x", every_other)}, 100, t0 + seconds(2));
  ASSERT_FALSE(report.warnings.empty());
  EXPECT_TRUE(contains(report.warnings[0], "submitted by ranks 0, 2, 4,")) << report.warnings[0];
  EXPECT_TRUE(contains(report.warnings[0], ", ... (50 ranks)")) << report.warnings[0];
  EXPECT_LT(report.warnings[0].size(), 400u);
}

TEST(StallInspectorTest, CheckTimeZeroDisablesWarnings) {
  auto stall = inspector(0, 0);
  auto report = stall.check({pending("a", {0})}, 2, t0 + std::chrono::hours(100));
  EXPECT_TRUE(report.warnings.empty());
  EXPECT_TRUE(report.error.empty());
}

// ---- shutdown ----------------------------------------------------------------

TEST(StallInspectorTest, ShutdownErrorNamesTensorsAndMissingRanks) {
  auto stall = inspector(60, 600);
  std::vector<PendingTensor> list = {
      pending("withheld", {0, 1}, t0),           // 600 s: over the limit
      pending("other", {2}, t0 + seconds(500)),  // 100 s: stalled too
      pending("fresh", {0}, t0 + seconds(599)),  // 1 s: in transit, not named
  };
  EXPECT_TRUE(stall.check(list, 3, t0 + milliseconds(599900)).error.empty());
  auto report = stall.check(list, 3, t0 + seconds(600));
  ASSERT_FALSE(report.error.empty());
  EXPECT_TRUE(report.warnings.empty());
  const std::string& e = report.error;
  EXPECT_TRUE(contains(e, "600 s")) << e;
  EXPECT_TRUE(contains(e, "HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS")) << e;
  EXPECT_TRUE(
      contains(e, "tensor 'withheld' (allreduce) submitted by ranks 0, 1; missing on rank 2"))
      << e;
  EXPECT_TRUE(contains(e, "tensor 'other' (allreduce) submitted by rank 2; missing on ranks 0, 1"))
      << e;
  EXPECT_FALSE(contains(e, "fresh")) << e;
  EXPECT_LT(e.find("withheld"), e.find("other")) << "oldest first: " << e;
}

TEST(StallInspectorTest, ShutdownWithoutWarningsStillNamesTheTensor) {
  auto stall = inspector(0, 5);
  auto report = stall.check({pending("w", {1})}, 2, t0 + seconds(5));
  EXPECT_TRUE(
      contains(report.error, "tensor 'w' (allreduce) submitted by rank 1; missing on rank 0"))
      << report.error;
}

TEST(StallInspectorTest, ShutdownTimeZeroNeverShutsDown) {
  auto stall = inspector(60, 0);
  auto report = stall.check({pending("a", {0})}, 2, t0 + std::chrono::hours(1000));
  EXPECT_TRUE(report.error.empty());
  EXPECT_FALSE(report.warnings.empty());
}

// ---- inspect(): the table, at most once per second ---------------------------

TEST(StallInspectorTest, InspectLooksAtTheTableAtMostOncePerSecond) {
  auto stall = inspector(0, 3);
  MessageTable table(2);
  table.add(request(0, "withheld"), t0);
  EXPECT_TRUE(stall.inspect(table, t0 + milliseconds(2500)).error.empty());
  // Past the limit, but only half a second after the last look.
  EXPECT_TRUE(stall.inspect(table, t0 + seconds(3)).error.empty());
  auto report = stall.inspect(table, t0 + milliseconds(3500));
  EXPECT_TRUE(contains(report.error, "'withheld'")) << report.error;
  EXPECT_TRUE(contains(report.error, "missing on rank 1")) << report.error;
}

TEST(StallInspectorTest, CompletedTensorsAreNotReported) {
  auto stall = inspector(1, 3);
  MessageTable table(2);
  table.add(request(0, "w"), t0);
  table.add(request(1, "w"), t0 + seconds(2));
  table.take_ready();
  auto report = stall.inspect(table, t0 + seconds(10));
  EXPECT_TRUE(report.warnings.empty());
  EXPECT_TRUE(report.error.empty());
}

}  // namespace
}  // namespace hvd
