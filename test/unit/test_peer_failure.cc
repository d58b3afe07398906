// The peer timeout setting (one bound, per-transport overrides), the roll
// call window, and the error that names the silent ranks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/diagnostics/peer_failure.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class PeerTimeoutTest : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name : {"PEER_TIMEOUT_SECONDS", "GLOO_TIMEOUT_SECONDS"}) {
      for (const char* prefix : {"HOROVODCPP_", "HOROVOD_"}) {
        unsetenv((std::string(prefix) + name).c_str());
      }
    }
  }
};

TEST_F(PeerTimeoutTest, DefaultSettingAndOverride) {
  EXPECT_EQ(peer_timeout(), seconds(30));
  EXPECT_EQ(peer_timeout(settings::Setting::kGlooTimeoutSeconds), seconds(30));
  setenv("HOROVODCPP_PEER_TIMEOUT_SECONDS", "2.5", 1);
  EXPECT_EQ(peer_timeout(), milliseconds(2500));
  EXPECT_EQ(peer_timeout(settings::Setting::kGlooTimeoutSeconds), milliseconds(2500));
  // Horovod's Gloo setting wins for Gloo alone.
  setenv("HOROVOD_GLOO_TIMEOUT_SECONDS", "7", 1);
  EXPECT_EQ(peer_timeout(settings::Setting::kGlooTimeoutSeconds), seconds(7));
  EXPECT_EQ(peer_timeout(), milliseconds(2500));
}

TEST_F(PeerTimeoutTest, BadValuesAreInvalidArgument) {
  for (const char* bad : {"0", "-1", "soon", ""}) {
    setenv("HOROVODCPP_PEER_TIMEOUT_SECONDS", bad, 1);
    EXPECT_THROW(peer_timeout(), InvalidArgument) << "'" << bad << "'";
  }
  unsetenv("HOROVODCPP_PEER_TIMEOUT_SECONDS");
  setenv("HOROVODCPP_GLOO_TIMEOUT_SECONDS", "0", 1);
  EXPECT_THROW(peer_timeout(settings::Setting::kGlooTimeoutSeconds), InvalidArgument);
}

TEST(RollCallWindow, ATenthOfTheTimeoutWithinTwoToFiveSeconds) {
  EXPECT_EQ(roll_call_window(seconds(1)), seconds(2));
  EXPECT_EQ(roll_call_window(seconds(30)), seconds(3));
  EXPECT_EQ(roll_call_window(seconds(600)), seconds(5));
}

TEST(PeerFailure, NamesTheSilentRanks) {
  RankFailure one = peer_failure("Gloo allreduce", {1}, "timed out");
  EXPECT_EQ(std::string(one.what()), "Gloo allreduce: rank 1 stopped answering (timed out)");
  EXPECT_EQ(one.ranks(), std::vector<int>{1});
  RankFailure two = peer_failure("MPI_Iallreduce", {1, 3}, "waited 30 s");
  EXPECT_EQ(std::string(two.what()), "MPI_Iallreduce: ranks 1, 3 stopped answering (waited 30 s)");
  EXPECT_EQ(two.ranks(), (std::vector<int>{1, 3}));
  RankFailure none = peer_failure("shm allreduce", {}, "timed out");
  EXPECT_NE(std::string(none.what()).find("none stopped answering"), std::string::npos);
  EXPECT_TRUE(none.ranks().empty());
}

TEST(PeerFailure, RankListsRoundTrip) {
  EXPECT_EQ(rank_list_text({}), "");
  EXPECT_EQ(rank_list_text({1, 3}), "1,3");
  EXPECT_EQ(parse_rank_list(""), std::vector<int>{});
  EXPECT_EQ(parse_rank_list("1,3"), (std::vector<int>{1, 3}));
  for (const char* bad : {"1,", "x", "-1", "1;2", "99999999999"}) {
    EXPECT_THROW(parse_rank_list(bad), InvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace hvd
