// CacheNegotiation with two simulated ranks (threads) whose bit vectors are
// ANDed in process: which cycles need the full round, which cached tensors
// are ready, how invalid, stalled, joined and evicted hits are handled, and
// when a lone hit goes inline.
#include <gtest/gtest.h>

#include <array>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "core/negotiation/cache_negotiation.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;

// N threads' meeting point: each call waits for all, ANDs the words and
// gathers the payloads.
class InProcessAnd {
 public:
  explicit InProcessAnd(int size) : size_(size), payloads_(static_cast<std::size_t>(size)) {}
  void exchange(int rank, std::vector<std::uint64_t>& words, const std::string& payload,
                std::vector<std::string>& gathered) {
    std::unique_lock<std::mutex> lock(mutex_);
    payloads_[rank] = payload;
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
    gathered = payloads_;
  }

 private:
  int size_;
  std::vector<std::string> payloads_;
  std::mutex mutex_;
  std::condition_variable done_;
  int arrived_ = 0;
  long generation_ = 0;
  std::vector<std::uint64_t> result_;
};

// One rank's Controller on the meeting point; carries payloads of up to
// `capacity` bytes (0: none, as most planes).
class RankOnBus : public Controller {
 public:
  RankOnBus(InProcessAnd& bus, int rank, std::size_t capacity) : bus_(bus), capacity_(capacity) {
    topology_.rank = rank;
    topology_.size = 2;
  }
  const Topology& topology() const override { return topology_; }
  std::vector<std::string> gather_to_root(const std::string&) override { return {}; }
  std::string broadcast_from_root(const std::string& m) override { return m; }
  void bitwise_and(std::vector<std::uint64_t>& words) override {
    std::vector<std::string> unused;
    bus_.exchange(topology_.rank, words, std::string(), unused);
  }
  std::size_t payload_capacity() const override { return capacity_; }
  void bitwise_and_gathering(std::vector<std::uint64_t>& words, const std::string& payload,
                             std::vector<std::string>& gathered) override {
    EXPECT_LE(payload.size(), capacity_);
    bus_.exchange(topology_.rank, words, payload, gathered);
  }

 private:
  InProcessAnd& bus_;
  std::size_t capacity_;
  Topology topology_;
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

std::vector<std::string> names(const std::vector<const Response*>& responses) {
  std::vector<std::string> out;
  for (const Response* r : responses) out.push_back(r->name);
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
    // Each rank's inline inputs (none by default).
    CacheNegotiation::InlineInput inline_input[2];
  };

  explicit TwoRanks(std::size_t capacity = 8,
                    std::chrono::milliseconds stalled_after = std::chrono::seconds(60),
                    std::size_t payload_capacity = 0)
      : bus_(2),
        planes_{RankOnBus(bus_, 0, payload_capacity), RankOnBus(bus_, 1, payload_capacity)},
        ranks_{CacheNegotiation(capacity, stalled_after),
               CacheNegotiation(capacity, stalled_after)} {}

  // One cycle on both ranks at once.
  std::array<CacheNegotiation::Outcome, 2> agree(const Cycle& cycle) {
    std::array<CacheNegotiation::Outcome, 2> out;
    std::thread other([&] {
      out[1] = ranks_[1].agree(std::vector<Request>(cycle.submit[1]), cycle.flags[1], planes_[1],
                               cycle.now, cycle.inline_input[1]);
    });
    out[0] = ranks_[0].agree(std::vector<Request>(cycle.submit[0]), cycle.flags[0], planes_[0],
                             cycle.now, cycle.inline_input[0]);
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
  std::array<RankOnBus, 2> planes_;
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

TEST_F(TwoRanks, BarriersHitTheCacheJoinsNever) {
  for (OpType op : {OpType::kBarrier, OpType::kJoin}) {
    const std::string name = op == OpType::kBarrier ? "barrier" : "join";
    Cycle c;
    for (int rank = 0; rank < 2; ++rank) {
      Request r;
      r.rank = rank;
      r.op_type = op;
      r.name = name;
      c.submit[rank] = {r};
    }
    Response agreed;
    agreed.op_type = op;
    agreed.name = name;
    for (int round = 0; round < 3; ++round) {
      auto out = agree(c);
      const bool hit = op == OpType::kBarrier && round > 0;
      for (auto& o : out) {
        EXPECT_EQ(o.full_round, !hit) << name << " round " << round;
        EXPECT_EQ(names(o.ready), hit ? std::vector<std::string>{name} : std::vector<std::string>{})
            << name << " round " << round;
      }
      update(hit ? std::vector<Response>{} : std::vector<Response>{agreed});
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

// Over a plane that carries 64-byte payloads.
class TwoRanksCarrying : public TwoRanks {
 protected:
  TwoRanksCarrying() : TwoRanks(8, std::chrono::seconds(60), 64) {}

  // Rank r's input of any request is "in<r>:<name>"; `accept` false: none.
  static CacheNegotiation::InlineInput input_of(int rank, bool accept = true) {
    return [rank, accept](const Request& r, std::size_t capacity, std::string& out) {
      EXPECT_EQ(capacity, 64u);
      if (!accept) return false;
      out = "in" + std::to_string(rank) + ":" + r.name;
      return true;
    };
  }
  Cycle both_submit(const std::vector<std::string>& names0,
                    const std::vector<std::string>& names1) {
    Cycle c;
    for (const std::string& n : names0) c.submit[0].push_back(request(0, n));
    for (const std::string& n : names1) c.submit[1].push_back(request(1, n));
    c.inline_input[0] = input_of(0);
    c.inline_input[1] = input_of(1);
    return c;
  }
};

TEST_F(TwoRanksCarrying, ALoneHitGoesInlineWithEveryRanksInput) {
  cache("a");
  auto out = agree(both_submit({"a"}, {"a"}));
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(out[r].full_round);
    EXPECT_TRUE(out[r].inline_data) << r;
    EXPECT_EQ(names(out[r].ready), std::vector<std::string>{"a"});
    EXPECT_EQ(ranks_[r].inline_inputs(), (std::vector<std::string>{"in0:a", "in1:a"})) << r;
  }
  update({});
}

TEST_F(TwoRanksCarrying, AHitNotYetReadyEverywhereGoesInlineOnceItIs) {
  cache("a");
  auto out = agree(both_submit({"a"}, {}));
  EXPECT_FALSE(out[0].inline_data);
  EXPECT_TRUE(out[0].ready.empty());
  update({});
  out = agree(both_submit({}, {"a"}));  // rank 0 sends its pending hit's input again
  EXPECT_TRUE(out[0].inline_data && out[1].inline_data);
  EXPECT_EQ(ranks_[1].inline_inputs(), (std::vector<std::string>{"in0:a", "in1:a"}));
}

TEST_F(TwoRanksCarrying, NothingGoesInlineUnlessEveryRankSentTheSameLoneHit) {
  cache("a");
  cache("b");
  // Rank 0 has two hits pending: it sends no input, so "a" runs as usual.
  auto out = agree(both_submit({"a", "b"}, {"a"}));
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(out[r].inline_data) << r;
    EXPECT_EQ(names(out[r].ready), std::vector<std::string>{"a"});
  }
  update({});
  out = agree(both_submit({}, {"b"}));  // now "b" is rank 0's only hit
  EXPECT_TRUE(out[0].inline_data && out[1].inline_data);
  update({});
  // A rank whose tensor cannot go inline (too large, not a CPU allreduce).
  Cycle refused = both_submit({"a"}, {"a"});
  refused.inline_input[1] = input_of(1, /*accept=*/false);
  out = agree(refused);
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(out[r].inline_data) << r;
    EXPECT_EQ(names(out[r].ready), std::vector<std::string>{"a"});
  }
  update({});
  // A joined rank: the hit goes to rank 0.
  Cycle joined = both_submit({"a"}, {"a"});
  joined.flags[1].joined = true;
  out = agree(joined);
  EXPECT_FALSE(out[0].inline_data || out[1].inline_data);
  EXPECT_EQ(names(out[0].to_negotiate), std::vector<std::string>{"a"});
  update({ok("a")});
  // A hit invalidated by the other rank (reshaped there) is renegotiated.
  Cycle reshaped = both_submit({"a"}, {});
  reshaped.submit[1] = {request(1, "a", /*rows=*/9)};
  out = agree(reshaped);
  EXPECT_FALSE(out[0].inline_data || out[1].inline_data);
  EXPECT_TRUE(out[0].ready.empty());
}

TEST_F(TwoRanks, APlaneWithoutPayloadsSendsNothingInline) {
  cache("a");
  Cycle c;
  c.submit[0] = {request(0, "a")};
  c.submit[1] = {request(1, "a")};
  for (int r = 0; r < 2; ++r) {
    c.inline_input[r] = [](const Request&, std::size_t, std::string&) {
      ADD_FAILURE() << "asked for an input the plane cannot carry";
      return false;
    };
  }
  auto out = agree(c);
  EXPECT_FALSE(out[0].inline_data || out[1].inline_data);
  EXPECT_EQ(names(out[0].ready), std::vector<std::string>{"a"});
}

}  // namespace
}  // namespace hvd
