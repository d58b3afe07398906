// The elastic membership protocol (store/elastic_round.h) over a FileStore:
// what hvdrun publishes is what a worker reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "horovodcpp/errors.h"
#include "store/elastic_round.h"
#include "store/file_store.h"

namespace hvd {
namespace elastic {
namespace {

class ElasticRoundTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/hvd_elastic_round_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    store_ = std::make_unique<FileStore>(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  std::unique_ptr<FileStore> store_;
};

Round two_hosts(long long number) {
  Round round;
  round.number = number;
  round.members = {{4, "h1", 0, 2, 0, 2}, {7, "h1", 1, 2, 0, 1}, {9, "10.0.0.2", 0, 1, 1, 2}};
  return round;
}

TEST_F(ElasticRoundTest, PublishedRoundsAreReadBack) {
  EXPECT_EQ(latest_round(*store_), 0);
  publish_round(*store_, two_hosts(1));
  EXPECT_EQ(latest_round(*store_), 1);
  const Round read = read_round(*store_, 1, std::chrono::milliseconds(100));
  ASSERT_EQ(read.members.size(), 3u);
  EXPECT_EQ(read.rank_of(7), 1);
  EXPECT_EQ(read.rank_of(9), 2);
  EXPECT_EQ(read.rank_of(5), -1);
  const Member& last = read.members[2];
  EXPECT_EQ(last.host, "10.0.0.2");
  EXPECT_EQ(last.local_size, 1);
  EXPECT_EQ(last.cross_rank, 1);
  EXPECT_EQ(last.cross_size, 2);
}

TEST_F(ElasticRoundTest, RoundsFollowEachOther) {
  publish_round(*store_, two_hosts(1));
  EXPECT_THROW(publish_round(*store_, two_hosts(3)), InvalidArgument);
  EXPECT_THROW(publish_round(*store_, two_hosts(1)), InvalidArgument);
  publish_round(*store_, two_hosts(2));
  EXPECT_EQ(latest_round(*store_), 2);
  EXPECT_THROW(read_round(*store_, 3, std::chrono::milliseconds(10)), Timeout);
}

TEST_F(ElasticRoundTest, ResetRequestsAndJoinsAreCounted) {
  publish_round(*store_, two_hosts(1));
  EXPECT_EQ(reset_requests(*store_, 1), 0);
  request_new_round(*store_, 1);
  request_new_round(*store_, 1);
  EXPECT_EQ(reset_requests(*store_, 1), 2);
  EXPECT_EQ(joined_round(*store_, 7), 0);
  record_joined(*store_, 7, 3);
  record_joined(*store_, 7, 2);  // rounds only grow
  EXPECT_EQ(joined_round(*store_, 7), 3);
}

TEST_F(ElasticRoundTest, MalformedMembershipIsAnError) {
  EXPECT_EQ(decode_members("").size(), 0u);
  EXPECT_THROW(decode_members("4 h1 0 2 0\n"), InvalidArgument);
  EXPECT_THROW(decode_members("4 h1 0 2 0 2 extra\n"), InvalidArgument);
  Round bad = two_hosts(1);
  bad.members[0].host = "two words";
  EXPECT_THROW(encode_members(bad.members), InvalidArgument);
}

}  // namespace
}  // namespace elastic
}  // namespace hvd
