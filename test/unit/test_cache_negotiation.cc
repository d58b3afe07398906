// CacheNegotiation with two simulated ranks (threads) whose bit vectors are
// ANDed in process: which cycles need the full round, which cached tensors
// are ready, and how invalid, stalled, joined and evicted hits are handled.
#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "core/negotiation/cache_negotiation.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;

// A Controller for N threads: bitwise_and waits for all and ANDs.
class InProcessAnd : public Controller {
 public:
  explicit InProcessAnd(int size) : size_(size) {}
  const Topology& topology() const override { return topology_; }
  std::vector<std::string> gather_to_root(const std::string&) override { return {}; }
  std::string broadcast_from_root(const std::string& m) override { return m; }
  void bitwise_and(std::vector<std::uint64_t>& words) override {
    std::unique_lock<std::mutex> lock(mutex_);
    const long generation = generation_;
    if (arrived_ == 0) {
      result_ = words;
    } else {
      EXPECT_EQ(result_.size(), words.size()) << "ranks disagree on the cache size";
      for (std::size_t i = 0; i < words.size() && i < result_.size(); ++i) result_[i] &= words[i];
    }
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      done_.notify_all();
    } else {
      done_.wait(lock, [&] { return generation_ != generation; });
    }
    words = result_;
  }

 private:
  int size_;
  Topology topology_;
  std::mutex mutex_;
  std::condition_variable done_;
  int arrived_ = 0;
  long generation_ = 0;
  std::vector<std::uint64_t> result_;
};

Request request(int rank, const std::string& name, std::int64_t rows = 4) {
  Request r;
  r.rank = rank;
  r.op_type = OpType::kAllreduce;
  r.name = name;
  r.dtype = DataType::kFloat32;
  r.shape = {rows};
  return r;
}

Response ok(const std::string& name) {
  Response r;
  r.op_type = OpType::kAllreduce;
  r.name = name;
  return r;
}

std::vector<std::string> names(const std::vector<Response>& responses) {
  std::vector<std::string> out;
  for (const Response& r : responses) out.push_back(r.name);
  return out;
}
std::vector<std::string> names(const std::vector<Request>& requests) {
  std::vector<std::string> out;
  for (const Request& r : requests) out.push_back(r.name);
  return out;
}

class TwoRanks : public testing::Test {
 protected:
  struct Cycle {
    std::vector<Request> submit[2];
    CycleFlags flags[2];
    Clock::time_point now = Clock::now();
  };

  explicit TwoRanks(std::size_t capacity = 8,
                    std::chrono::milliseconds stalled_after = std::chrono::seconds(60))
      : bus_(2), ranks_{CacheNegotiation(capacity, stalled_after),
                        CacheNegotiation(capacity, stalled_after)} {}

  // One cycle on both ranks at once.
  std::array<CacheNegotiation::Outcome, 2> agree(const Cycle& cycle) {
    std::array<CacheNegotiation::Outcome, 2> out;
    std::thread other([&] { out[1] = ranks_[1].agree(cycle.submit[1], cycle.flags[1], bus_, cycle.now); });
    out[0] = ranks_[0].agree(cycle.submit[0], cycle.flags[0], bus_, cycle.now);
    other.join();
    return out;
  }
  void update(const std::vector<Response>& negotiated) {
    for (CacheNegotiation& rank : ranks_) rank.update(negotiated);
  }
  // Negotiates `name` on both ranks and caches it.
  void cache(const std::string& name) {
    Cycle c;
    c.submit[0] = {request(0, name)};
    c.submit[1] = {request(1, name)};
    auto out = agree(c);
    ASSERT_TRUE(out[0].full_round && out[1].full_round);
    update({ok(name)});
  }

  InProcessAnd bus_;
  std::array<CacheNegotiation, 2> ranks_;
};

TEST_F(TwoRanks, NewTensorsTakeTheFullRoundThenHitTheCache) {
  Cycle first;
  first.submit[0] = {request(0, "a")};
  first.submit[1] = {request(1, "a")};
  auto out = agree(first);
  for (auto& o : out) {
    EXPECT_TRUE(o.full_round);
    EXPECT_TRUE(o.ready.empty());
    EXPECT_EQ(names(o.to_negotiate), std::vector<std::string>{"a"});
  }
  update({ok("a")});

  out = agree(first);
  for (auto& o : out) {
    EXPECT_FALSE(o.full_round);  // steady state: the bit exchange alone
    EXPECT_EQ(names(o.ready), std::vector<std::string>{"a"});
    EXPECT_TRUE(o.to_negotiate.empty());
  }
  update({});
}

TEST_F(TwoRanks, AHitWaitsUntilEveryRankHasSubmitted) {
  cache("a");
  cache("b");
  Cycle c;
  c.submit[0] = {request(0, "b"), request(0, "a")};
  c.submit[1] = {request(1, "a")};
  auto out = agree(c);
  EXPECT_FALSE(out[0].full_round);
  EXPECT_EQ(names(out[0].ready), std::vector<std::string>{"a"});
  EXPECT_EQ(names(out[1].ready), std::vector<std::string>{"a"});
  EXPECT_EQ(ranks_[0].pending_hits(), 1u);
  update({});

  Cycle idle;
  out = agree(idle);
  EXPECT_TRUE(out[0].ready.empty());
  update({});
  Cycle late;
  late.submit[1] = {request(1, "b")};
  out = agree(late);
  EXPECT_EQ(names(out[0].ready), std::vector<std::string>{"b"});
  EXPECT_EQ(names(out[1].ready), std::vector<std::string>{"b"});
  EXPECT_EQ(ranks_[0].pending_hits(), 0u);
}

TEST_F(TwoRanks, AChangedShapeIsRenegotiatedOnEveryRank) {
  cache("a");
  Cycle c;
  c.submit[0] = {request(0, "a", /*rows=*/5)};  // reshaped on rank 0 only
  c.submit[1] = {request(1, "a")};
  auto out = agree(c);
  for (auto& o : out) {
    EXPECT_TRUE(o.full_round);
    EXPECT_TRUE(o.ready.empty());  // never served from a stale entry
    EXPECT_EQ(names(o.to_negotiate), std::vector<std::string>{"a"});
  }
  EXPECT_EQ(out[0].to_negotiate[0].shape, std::vector<std::int64_t>{5});
  update({});  // rank 0 of the job reports the mismatch; nothing is cached
  Cycle again;
  again.submit[0] = {request(0, "a")};
  again.submit[1] = {request(1, "a")};
  out = agree(again);
  EXPECT_TRUE(out[0].full_round);  // the entry is gone: a miss on both ranks
  EXPECT_TRUE(out[0].ready.empty());
}

TEST_F(TwoRanks, FlagsForceTheFullRound) {
  cache("a");
  for (int which = 0; which < 3; ++which) {
    Cycle c;
    c.submit[0] = {request(0, "a")};
    c.submit[1] = {request(1, "a")};
    CycleFlags& f = c.flags[1];
    if (which == 0) f.shutdown = true;
    if (which == 1) f.root_busy = true;
    if (which == 2) f.joined = true;
    auto out = agree(c);
    EXPECT_TRUE(out[0].full_round) << which;
    if (which == 2) {
      // Joined: hits go to rank 0, which runs them without the joined rank.
      EXPECT_TRUE(out[0].ready.empty());
      EXPECT_EQ(names(out[0].to_negotiate), std::vector<std::string>{"a"});
      update({ok("a")});
    } else {
      EXPECT_EQ(names(out[0].ready), std::vector<std::string>{"a"}) << which;
      update({});
    }
  }
}

class TwoRanksStall : public TwoRanks {
 protected:
  TwoRanksStall() : TwoRanks(8, std::chrono::milliseconds(1000)) {}
};

TEST_F(TwoRanksStall, AHitWaitingTooLongGoesToRankZero) {
  cache("a");
  Cycle c;
  c.submit[0] = {request(0, "a")};
  agree(c);
  update({});
  Cycle later;
  later.now = c.now + std::chrono::seconds(2);
  auto out = agree(later);
  EXPECT_TRUE(out[0].full_round);
  EXPECT_EQ(names(out[0].to_negotiate), std::vector<std::string>{"a"});
  EXPECT_EQ(ranks_[0].pending_hits(), 0u);
}

class TwoRanksTiny : public TwoRanks {
 protected:
  TwoRanksTiny() : TwoRanks(1) {}
};

TEST_F(TwoRanksTiny, AnEvictedHitIsNegotiatedNextCycle) {
  cache("a");
  Cycle c;
  c.submit[0] = {request(0, "a"), request(0, "b")};  // a hits, b is new
  c.submit[1] = {request(1, "b")};
  auto out = agree(c);
  EXPECT_TRUE(out[0].full_round);
  EXPECT_EQ(names(out[0].to_negotiate), std::vector<std::string>{"b"});
  update({ok("b")});  // b evicts a, which rank 0 still waits on
  EXPECT_EQ(ranks_[0].pending_hits(), 0u);
  Cycle next;
  next.submit[1] = {request(1, "a")};
  out = agree(next);
  EXPECT_EQ(names(out[0].to_negotiate), std::vector<std::string>{"a"});
  EXPECT_EQ(names(out[1].to_negotiate), std::vector<std::string>{"a"});
}

}  // namespace
}  // namespace hvd
