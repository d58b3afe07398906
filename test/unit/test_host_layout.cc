// host_layout: the hosts of a job from a key per rank, as the two-level
// backend groups them (core/process_sets/host_layout.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/process_sets/host_layout.h"

namespace hvd {
namespace {

using Ranks = std::vector<int>;

TEST(HostLayout, InterleavedEvenHosts) {
  const std::vector<std::string> keys = {"a", "b", "a", "b"};
  const HostLayout layout = host_layout(keys, 3);
  EXPECT_EQ(layout.hosts, (std::vector<Ranks>{{0, 2}, {1, 3}}));
  EXPECT_EQ(layout.host, 1);
  EXPECT_EQ(layout.local, 1);
  EXPECT_TRUE(layout.even());
  EXPECT_EQ(layout.cross(0), (Ranks{0, 1}));
  EXPECT_EQ(layout.cross(1), (Ranks{2, 3}));
}

TEST(HostLayout, UnevenHosts) {
  const std::vector<std::string> keys = {"x", "y", "y", "x", "y"};
  const HostLayout layout = host_layout(keys, 2);
  EXPECT_EQ(layout.hosts, (std::vector<Ranks>{{0, 3}, {1, 2, 4}}));
  EXPECT_EQ(layout.host, 1);
  EXPECT_EQ(layout.local, 1);
  EXPECT_FALSE(layout.even());
  EXPECT_EQ(layout.cross(0), (Ranks{0, 1}));
  EXPECT_EQ(layout.cross(1), (Ranks{2, 3}));
  EXPECT_EQ(layout.cross(2), (Ranks{4}));
}

TEST(HostLayout, CrossRanksAreAscending) {
  // Host order follows the lowest rank; the second ranks are 3 (host 0) and 2 (host 1).
  const HostLayout layout = host_layout({"p", "q", "q", "p"}, 0);
  EXPECT_EQ(layout.cross(1), (Ranks{2, 3}));
}

}  // namespace
}  // namespace hvd
