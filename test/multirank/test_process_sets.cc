// Process sets through the public API on any rank count: every collective on
// a set equals the reference over its members only, non-members and removed
// sets are refused, overlapping sets run at once, sets given at init, adding
// and removing repeatedly, disagreeing ranks, and sets progressing while
// another set waits for a withheld tensor. Every rank makes the same
// add/remove calls in the same order whatever happens (they are collective
// over the job), so that one rank's failed check never leaves the others
// waiting.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "horovodcpp/horovodcpp.h"
#include "test_helpers.h"

namespace hvdtest {
namespace {

using hvd::ProcessSet;
using hvd::Work;

int me() { return hvd::rank(); }
int world() { return hvd::size(); }

std::vector<int> ranks_in(int first, int last) {  // [first, last)
  std::vector<int> ranks;
  for (int r = first; r < last; ++r) ranks.push_back(r);
  return ranks;
}

std::vector<int> ranks_with_parity(int parity) {
  std::vector<int> ranks;
  for (int r = parity; r < world(); r += 2) ranks.push_back(r);
  return ranks;
}

// Small and overlapping sets for this job size, without repeats and without
// the global set (adding either is an error): {0}, {1..n-1}, evens, odds,
// {0,1}, {0,1,2}, {0..n-2}.
std::vector<std::vector<int>> layouts() {
  const int n = world();
  std::vector<std::vector<int>> candidates = {{0},
                                              ranks_in(1, n),
                                              ranks_with_parity(0),
                                              ranks_with_parity(1),
                                              ranks_in(0, std::min(2, n)),
                                              ranks_in(0, std::min(3, n)),
                                              ranks_in(0, n - 1)};
  std::vector<std::vector<int>> sets;
  for (auto& ranks : candidates) {
    if (ranks.empty() || static_cast<int>(ranks.size()) == n) continue;
    if (std::find(sets.begin(), sets.end(), ranks) != sets.end()) continue;
    sets.push_back(ranks);
  }
  return sets;
}

// Adds the sets on every rank and removes them (on every rank) when it goes
// out of scope.
class AddedSets {
 public:
  explicit AddedSets(const std::vector<std::vector<int>>& rank_lists) {
    for (const auto& ranks : rank_lists) sets_.push_back(hvd::add_process_set(ranks));
  }
  ~AddedSets() {
    for (auto it = sets_.rbegin(); it != sets_.rend(); ++it) {
      try {
        hvd::remove_process_set(*it);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "remove_process_set: " << e.what();
      }
    }
  }
  const std::vector<ProcessSet>& sets() const { return sets_; }
  std::vector<ProcessSet> mine() const {
    std::vector<ProcessSet> included;
    for (const ProcessSet& s : sets_) {
      if (s.included()) included.push_back(s);
    }
    return included;
  }

 private:
  std::vector<ProcessSet> sets_;
};

// The first `count` elements of a library-allocated result.
template <typename T>
std::vector<T> values_of(const hvd::Tensor& tensor, std::size_t count) {
  return std::vector<T>(tensor.data_as<T>(), tensor.data_as<T>() + count);
}

std::string set_name(const ProcessSet& set) {
  std::string name = "set" + std::to_string(set.id()) + "[";
  for (int r : set.ranks()) name += std::to_string(r) + ",";
  return name + "]";
}

// Waits for every Work; reports an error as a failure of `what`.
void wait_all_ok(std::vector<Work>& works, const std::string& what) {
  for (Work& work : works) {
    try {
      work.wait(kPatience());
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": " << e.what();
    }
  }
}

template <typename Fn>
void expect_invalid_argument(const std::string& what, Fn&& fn, const std::string& mention = "") {
  try {
    fn();
    ADD_FAILURE() << what << ": no error";
  } catch (const hvd::InvalidArgument& e) {
    if (!mention.empty()) {
      EXPECT_NE(lower(e.what()).find(lower(mention)), std::string::npos)
          << what << ": the message does not mention \"" << mention << "\": " << e.what();
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": wrong error type: " << e.what();
  }
}

// ---- The value ----------------------------------------------------------------

TEST(ProcessSets, GlobalSetIsEveryRank) {
  const ProcessSet global = hvd::global_process_set();
  EXPECT_EQ(global.id(), 0);
  EXPECT_EQ(global.ranks(), ranks_in(0, world()));
  EXPECT_EQ(global.rank(), me());
  EXPECT_EQ(global.size(), world());
  EXPECT_TRUE(global.included());
  const std::vector<ProcessSet> all = hvd::process_sets();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0], global);
}

TEST(ProcessSets, AddedSetsKnowTheirMembers) {
  AddedSets added(layouts());
  const std::vector<ProcessSet> all = hvd::process_sets();
  ASSERT_EQ(all.size(), added.sets().size() + 1);
  for (std::size_t i = 0; i < added.sets().size(); ++i) {
    const ProcessSet& set = added.sets()[i];
    EXPECT_EQ(set.id(), static_cast<int>(i) + 1);
    EXPECT_EQ(all[i + 1], set);
    const auto it = std::find(set.ranks().begin(), set.ranks().end(), me());
    if (it == set.ranks().end()) {
      EXPECT_FALSE(set.included()) << set_name(set);
      EXPECT_EQ(set.rank(), -1);
    } else {
      EXPECT_EQ(set.rank(), it - set.ranks().begin()) << set_name(set);
    }
  }
}

// ---- Collectives on sets: the reference over the members only --------------

// Allreduces of several dtypes and ops on every set this rank is in, all in
// flight at once under the same names (names are per set).
TEST(ProcessSets, AllreduceEqualsReferenceOverMembers) {
  AddedSets added(layouts());
  struct Case {
    DataType dtype;
    ReduceOp op;
    double prescale, postscale;
  };
  const std::vector<Case> cases = {{DataType::kFloat32, ReduceOp::kSum, 1, 1},
                                   {DataType::kFloat64, ReduceOp::kAverage, 0.5, 2},
                                   {DataType::kInt32, ReduceOp::kMax, 1, 1},
                                   {DataType::kInt64, ReduceOp::kAverage, 1, 1},
                                   {DataType::kBFloat16, ReduceOp::kSum, 1, 1}};
  std::vector<ProcessSet> sets = added.mine();
  sets.push_back(hvd::global_process_set());
  std::vector<Buffer> buffers;
  std::vector<Work> works;
  buffers.reserve(sets.size() * cases.size());
  for (const ProcessSet& set : sets) {
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const std::string name = "ps.ar." + std::to_string(c);
      buffers.emplace_back(cases[c].dtype, std::vector<std::int64_t>{257});
      buffers.back().fill(pattern_for(cases[c].op, cases[c].dtype), salt_of(name + set_name(set)),
                          set.rank());
      works.push_back(hvd::allreduce_async(buffers.back().view(), name, cases[c].op,
                                           cases[c].prescale, cases[c].postscale, set));
    }
  }
  wait_all_ok(works, "allreduce on sets");
  std::size_t b = 0;
  for (const ProcessSet& set : sets) {
    for (std::size_t c = 0; c < cases.size(); ++c, ++b) {
      const std::string name = "ps.ar." + std::to_string(c);
      check_allreduce(buffers[b], cases[c].op, pattern_for(cases[c].op, cases[c].dtype),
                      salt_of(name + set_name(set)), set.size(), cases[c].prescale,
                      cases[c].postscale, name + " on " + set_name(set));
    }
  }
}

// Member i of a set contributes (global rank + 1) rows holding its global
// rank: the result lists the members in set order.
TEST(ProcessSets, AllgatherConcatenatesMembersInSetOrder) {
  AddedSets added(layouts());
  for (const ProcessSet& set : added.mine()) {
    std::vector<std::int32_t> rows(static_cast<std::size_t>(me() + 1) * 2, me());
    const hvd::Tensor all = hvd::allgather(hvd::view(rows.data(), {me() + 1, 2}), "ps.ag", set);
    std::vector<std::int32_t> want;
    for (int r : set.ranks()) want.insert(want.end(), static_cast<std::size_t>(r + 1) * 2, r);
    ASSERT_EQ(all.shape(),
              (std::vector<std::int64_t>{static_cast<std::int64_t>(want.size()) / 2, 2}))
        << set_name(set);
    EXPECT_EQ(values_of<std::int32_t>(all, want.size()), want) << set_name(set);
  }
}

// The root is a global rank; every member ends with the root's bytes.
TEST(ProcessSets, BroadcastFromEachMemberGivenByGlobalRank) {
  AddedSets added(layouts());
  for (const ProcessSet& set : added.mine()) {
    for (int root : set.ranks()) {
      const std::string name = "ps.bc." + std::to_string(root);
      const std::uint64_t salt = salt_of(name + set_name(set));
      Buffer t(DataType::kFloat64, {33});
      t.fill(Pattern::kBits, salt, me());
      Buffer want(DataType::kFloat64, {33});
      want.fill(Pattern::kBits, salt, root);
      hvd::broadcast(t.view(), root, name, set);
      check_same_bytes(t.data(), want, name + " on " + set_name(set));
    }
  }
}

TEST(ProcessSets, BroadcastRootOutsideTheSetFailsOnEveryMember) {
  if (world() < 2) GTEST_SKIP() << "needs a rank outside the set";
  AddedSets added(std::vector<std::vector<int>>{{0}});
  if (me() == 0) {
    Buffer t(DataType::kFloat32, {4});
    auto error =
        error_of([&] { return hvd::broadcast_async(t.view(), 1, "ps.bc.out", added.sets()[0]); });
    expect_error<hvd::InvalidArgument>(error, {"root rank 1", "not a member"}, {},
                                       "broadcast from a non-member");
  }
}

// Member i sends (i + j) % 3 + 1 rows to member j; rows hold kBits values of
// the sender's set rank.
TEST(ProcessSets, AlltoallWithinTheSet) {
  AddedSets added(layouts());
  for (const ProcessSet& set : added.mine()) {
    const int n = set.size(), i = set.rank();
    const std::string name = "ps.a2a";
    const std::uint64_t salt = salt_of(name + set_name(set));
    const auto sends = [&](int from, int to) { return std::int64_t{(from + to) % 3 + 1}; };
    std::vector<std::int64_t> splits;
    std::int64_t rows = 0;
    for (int j = 0; j < n; ++j) {
      splits.push_back(sends(i, j));
      rows += splits.back();
    }
    Buffer input(DataType::kInt16, {rows, 3});
    input.fill(Pattern::kBits, salt, i);
    std::vector<std::int64_t> want_splits;
    std::vector<std::int16_t> want;
    for (int from = 0; from < n; ++from) {
      std::int64_t first = 0;
      for (int j = 0; j < i; ++j) first += sends(from, j);
      want_splits.push_back(sends(from, i));
      for (std::int64_t e = first * 3; e < (first + sends(from, i)) * 3; ++e) {
        want.push_back(input_value<std::int16_t>(Pattern::kBits, salt, from, e));
      }
    }
    std::vector<std::int64_t> received;
    const hvd::Tensor out = hvd::alltoall(input.view(), splits, name, &received, set);
    EXPECT_EQ(received, want_splits) << set_name(set);
    ASSERT_EQ(out.num_elements(), static_cast<std::int64_t>(want.size())) << set_name(set);
    EXPECT_EQ(values_of<std::int16_t>(out, want.size()), want) << set_name(set);
  }
}

// Shares are split among the members; values reduce over the members only.
TEST(ProcessSets, ReducescatterSharesAmongMembers) {
  AddedSets added(layouts());
  for (const ProcessSet& set : added.mine()) {
    const int n = set.size(), i = set.rank();
    const std::string name = "ps.rs";
    const std::uint64_t salt = salt_of(name + set_name(set));
    const std::int64_t rows = 2 * n + 1, cols = 3;
    Buffer input(DataType::kFloat32, {rows, cols});
    input.fill(Pattern::kSmall, salt, i);
    const hvd::Tensor out = hvd::reducescatter(input.view(), name, ReduceOp::kSum, 1.0, 1.0, set);
    const std::vector<std::int64_t> shape = {share_rows(rows, n, i), cols};
    ASSERT_EQ(out.shape(), shape) << set_name(set);
    Buffer got(DataType::kFloat32, shape);
    std::memcpy(got.data(), out.data(), got.size_bytes());
    check_values(got,
                 reference_buffer(DataType::kFloat32, shape, ReduceOp::kSum, Pattern::kSmall, salt,
                                  n, 1.0, 1.0, share_first_row(rows, n, i) * cols),
                 name + " on " + set_name(set));
  }
}

TEST(ProcessSets, GroupedOpsAndBarrierOnSets) {
  AddedSets added(layouts());
  for (const ProcessSet& set : added.mine()) {
    const std::uint64_t salt = salt_of("ps.group" + set_name(set));
    std::vector<Buffer> tensors;
    for (std::int64_t count : {5, 1000, 1}) {
      tensors.emplace_back(DataType::kFloat32, std::vector<std::int64_t>{count});
      tensors.back().fill(Pattern::kSmall, salt + static_cast<std::uint64_t>(count), set.rank());
    }
    std::vector<hvd::TensorView> views;
    for (Buffer& t : tensors) views.push_back(t.view());
    hvd::grouped_allreduce(views, "ps.group", ReduceOp::kSum, 1.0, 1.0, set);
    for (Buffer& t : tensors) {
      check_allreduce(t, ReduceOp::kSum, Pattern::kSmall,
                      salt + static_cast<std::uint64_t>(t.num_elements()), set.size(), 1.0, 1.0,
                      "grouped allreduce on " + set_name(set));
    }
    std::vector<std::int32_t> a(2, me()), b(3, me());
    const std::vector<hvd::Tensor> gathered =
        hvd::grouped_allgather({hvd::view(a), hvd::view(b)}, "ps.group.ag", set);
    ASSERT_EQ(gathered.size(), 2u);
    EXPECT_EQ(gathered[1].num_elements(), 3 * set.size()) << set_name(set);
    EXPECT_EQ(gathered[1].data_as<std::int32_t>()[3 * set.size() - 1], set.ranks().back());
    EXPECT_NO_THROW(hvd::barrier(set)) << set_name(set);
  }
}

// ---- Refusals -------------------------------------------------------------------

TEST(ProcessSets, NonMembersAreRefusedAtOnce) {
  if (world() < 2) GTEST_SKIP() << "every set includes the only rank";
  AddedSets added({{0}, ranks_in(1, world())});
  for (const ProcessSet& set : added.sets()) {
    if (set.included()) continue;
    std::vector<float> t(4, 1.0f);
    const std::string m = "not a member";
    expect_invalid_argument(
        "allreduce", [&] { hvd::allreduce_async(hvd::view(t), "x", ReduceOp::kSum, 1, 1, set); },
        m);
    expect_invalid_argument(
        "allgather", [&] { hvd::allgather_async(hvd::view(t), "x", set); }, m);
    expect_invalid_argument(
        "broadcast", [&] { hvd::broadcast_async(hvd::view(t), set.ranks()[0], "x", set); }, m);
    expect_invalid_argument(
        "alltoall", [&] { hvd::alltoall_async(hvd::view(t), {}, "x", set); }, m);
    expect_invalid_argument(
        "reducescatter",
        [&] { hvd::reducescatter_async(hvd::view(t), "x", ReduceOp::kSum, 1, 1, set); }, m);
    expect_invalid_argument(
        "grouped",
        [&] { hvd::grouped_allreduce_async({hvd::view(t)}, "x", ReduceOp::kSum, 1, 1, set); }, m);
    expect_invalid_argument(
        "barrier", [&] { hvd::barrier(set); }, m);
  }
}

TEST(ProcessSets, InvalidRankListsAreRefusedOnEveryRank) {
  const int n = world();
  expect_invalid_argument(
      "empty", [] { hvd::add_process_set({}); }, "at least one rank");
  expect_invalid_argument(
      "duplicate",
      [] {
        hvd::add_process_set({0, 0});
      },
      "more than once");
  expect_invalid_argument(
      "too large",
      [&] {
        hvd::add_process_set({0, n});
      },
      "outside");
  expect_invalid_argument(
      "negative", [] { hvd::add_process_set({-1}); }, "outside");
  expect_invalid_argument(
      "the global set", [&] { hvd::add_process_set(ranks_in(0, n)); }, "already exists");
  // Any order is accepted; the set keeps its ranks ascending.
  if (n >= 2) {
    std::vector<int> backwards = ranks_in(1, n);
    std::reverse(backwards.begin(), backwards.end());
    AddedSets added({backwards});
    EXPECT_EQ(added.sets()[0].ranks(), ranks_in(1, n));
    expect_invalid_argument(
        "an existing set", [&] { hvd::add_process_set(ranks_in(1, n)); }, "already exists");
  }
  EXPECT_EQ(hvd::process_sets().size(), 1u);
}

TEST(ProcessSets, RemovedUnknownAndGlobalSetsAreRefused) {
  expect_invalid_argument(
      "remove the global set", [] { hvd::remove_process_set(hvd::global_process_set()); },
      "global");
  expect_invalid_argument(
      "remove a default ProcessSet", [] { hvd::remove_process_set(ProcessSet()); },
      "not registered");
  std::vector<float> t(4, 1.0f);
  expect_invalid_argument(
      "submit to a default ProcessSet",
      [&] { hvd::allreduce_async(hvd::view(t), "x", ReduceOp::kSum, 1, 1, ProcessSet()); },
      "not registered");

  if (world() < 2) return;  // {0} would be the global set
  const ProcessSet set = hvd::add_process_set({0});
  hvd::remove_process_set(set);
  expect_invalid_argument(
      "remove twice", [&] { hvd::remove_process_set(set); }, "not registered");
  if (me() == 0) {
    expect_invalid_argument(
        "submit to a removed set",
        [&] { hvd::allreduce_async(hvd::view(t), "x", ReduceOp::kSum, 1, 1, set); },
        "not registered");
  }
  EXPECT_EQ(hvd::process_sets().size(), 1u);
}

// Rank 0 adds {0}, the others {0, 1}: every rank throws, naming each call
// and its ranks; the channel still works afterwards. Then rank 0 adds while
// the others remove: refused everywhere, nothing changes.
TEST(ProcessSets, DisagreeingRanksAllThrow) {
  const int n = world();
  if (n < 2) GTEST_SKIP() << "needs two ranks to disagree";
  try {
    hvd::add_process_set(me() == 0 ? std::vector<int>{0} : std::vector<int>{0, 1});
    ADD_FAILURE() << "disagreeing add_process_set did not throw";
  } catch (const hvd::InvalidArgument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("add_process_set([0]) on rank 0"), std::string::npos) << message;
    EXPECT_NE(message.find("add_process_set([0, 1]) on rank"), std::string::npos) << message;
    for (int r = 0; r < n; ++r) EXPECT_TRUE(ranks_named(message).count(r)) << r << ": " << message;
  }
  EXPECT_EQ(hvd::process_sets().size(), 1u);

  // A set other than the global one: {0, 1}, or {0} with two ranks.
  const std::vector<int> pair = n == 2 ? std::vector<int>{0} : std::vector<int>{0, 1};
  AddedSets added({pair});
  const ProcessSet& set = added.sets()[0];
  try {
    if (me() == 0) {
      hvd::add_process_set({0});
    } else {
      hvd::remove_process_set(set);
    }
    ADD_FAILURE() << "add on one rank and remove on the others did not throw";
  } catch (const hvd::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("remove_process_set(" + std::to_string(set.id())),
              std::string::npos)
        << e.what();
  }
  ASSERT_EQ(hvd::process_sets().size(), 2u);
  if (set.included()) {
    std::vector<std::int32_t> v(3, 1);
    hvd::allreduce(hvd::view(v), "ps.after.disagreement", ReduceOp::kSum, 1, 1, set);
    EXPECT_EQ(v[0], static_cast<std::int32_t>(pair.size()));
  }
}

// ---- Life cycle -------------------------------------------------------------------

TEST(ProcessSets, AddAndRemoveRepeatedly) {
  const int n = world();
  if (n < 2) GTEST_SKIP() << "the only set of one rank is the global set";
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // Alternates {r} and the ranks other than r (when that is not the job).
    const int r = round % n;
    std::vector<int> ranks = {r};
    if (round % 2 == 1 && n > 1) {
      ranks = ranks_in(0, n);
      ranks.erase(ranks.begin() + r);
    }
    const ProcessSet set = hvd::add_process_set(ranks);
    EXPECT_GE(set.id(), 1);
    if (set.included()) {
      std::vector<std::int64_t> v(5, me());
      hvd::allreduce(hvd::view(v), "ps.round", ReduceOp::kSum, 1, 1, set);
      std::int64_t want = 0;
      for (int m : ranks) want += m;
      EXPECT_EQ(v[4], want);
    }
    hvd::remove_process_set(set);
  }
  EXPECT_EQ(hvd::process_sets().size(), 1u);
}

// Rank 0 submits on {0, 1}, rank 1 never does; removing the set fails the
// pending operation with an error (not a hang) and leaves the rest working.
TEST(ProcessSets, RemovingFailsPendingOperations) {
  if (world() < 3) GTEST_SKIP() << "needs a two-member set besides the global one";
  const ProcessSet set = hvd::add_process_set({0, 1});
  std::vector<float> t(4, 1.0f);
  Work pending;
  if (me() == 0)
    pending = hvd::allreduce_async(hvd::view(t), "ps.orphan", ReduceOp::kSum, 1, 1, set);
  hvd::barrier();  // submitted before anyone removes
  hvd::remove_process_set(set);
  if (me() == 0) {
    auto error = error_of([&] { return pending; });
    expect_error<hvd::RankFailure>(error, {}, {}, "pending when its set was removed");
  }
  std::vector<std::int32_t> v(2, 1);
  hvd::allreduce(hvd::view(v), "ps.after.remove", ReduceOp::kSum);
  EXPECT_EQ(v[1], world());
}

// init() with process sets: ids 1, 2, ... in the order given. A list equal
// to the global set makes init() fail on every rank.
TEST(ProcessSets, SetsGivenAtInit) {
  const int n = world(), rank = me();
  expect_invalid_argument(
      "init(sets) while initialized", [] { hvd::init({{0}}); }, "already initialized");
  hvd::shutdown();
  expect_invalid_argument(
      "init with the global set", [&] { hvd::init({ranks_in(0, n)}); }, "already exists");
  EXPECT_FALSE(hvd::is_initialized());
  if (n >= 2) {
    hvd::init({{0}, ranks_in(1, n)});
    const std::vector<ProcessSet> sets = hvd::process_sets();
    ASSERT_EQ(sets.size(), 3u);
    EXPECT_EQ(sets[1].id(), 1);
    EXPECT_EQ(sets[1].ranks(), std::vector<int>{0});
    EXPECT_EQ(sets[2].id(), 2);
    EXPECT_EQ(sets[2].ranks(), ranks_in(1, n));
    const ProcessSet& mine = rank == 0 ? sets[1] : sets[2];
    std::vector<std::int32_t> v(3, rank);
    hvd::allreduce(hvd::view(v), "ps.init", ReduceOp::kSum, 1, 1, mine);
    EXPECT_EQ(v[2], rank == 0 ? 0 : n * (n - 1) / 2);
    hvd::shutdown();  // stops the sets, then the global set
  }
  hvd::init();
  EXPECT_EQ(hvd::process_sets().size(), 1u);
}

// ---- Concurrency ------------------------------------------------------------------

// `waiter` submits a tensor on `blocked` and `holder` (another member)
// withholds it until the members of `progressing` have completed many
// operations on their set, and the global set has carried the signal that
// they have. The waiter checks that its tensor was still pending then, so
// the progressing set finished strictly before the withheld tensor was
// submitted; then the holder submits it and it completes.
void expect_progress_while_blocked(const std::vector<int>& blocked, int waiter, int holder,
                                   const std::vector<int>& progressing) {
  AddedSets added({blocked, progressing});
  const ProcessSet& blocked_set = added.sets()[0];
  const ProcessSet& progress_set = added.sets()[1];
  std::vector<float> held(8, static_cast<float>(me() + 1));
  Work held_work;
  if (me() == waiter) {
    held_work = hvd::allreduce_async(hvd::view(held), "ps.held", ReduceOp::kSum, 1, 1, blocked_set);
  }
  hvd::barrier();  // the withheld tensor is in flight on the waiter

  // The progressing set: many operations, each bounded (a set that waited
  // for the blocked one would never finish them).
  std::int32_t done = 0;
  if (progress_set.included()) {
    done = 1;
    for (int k = 0; k < 30 && done; ++k) {
      std::vector<std::int32_t> v(16, me());
      try {
        Work w = hvd::allreduce_async(hvd::view(v), "ps.progress." + std::to_string(k),
                                      ReduceOp::kSum, 1, 1, progress_set);
        w.wait(std::chrono::seconds(20));
      } catch (const std::exception& e) {
        ADD_FAILURE() << "progressing set, operation " << k << ": " << e.what();
        done = 0;
      }
      std::int32_t want = 0;
      for (int m : progress_set.ranks()) want += m;
      if (v[15] != want) {
        ADD_FAILURE() << "progressing set, operation " << k << ": " << v[15] << " != " << want;
        done = 0;
      }
    }
  }
  const std::int32_t held_pending = (me() == waiter && !held_work.poll()) ? 1 : 0;

  // The signal, on the global set while the withheld tensor is pending.
  std::vector<std::int32_t> flags = {done, held_pending};
  const hvd::Tensor all_flags = hvd::allgather(hvd::view(flags.data(), {1, 2}), "ps.signal");
  const std::int32_t* f = all_flags.data_as<std::int32_t>();
  for (int r : progress_set.ranks()) {
    EXPECT_EQ(f[2 * r], 1) << "rank " << r << " did not complete the progressing set's work";
  }
  EXPECT_EQ(f[2 * waiter + 1], 1) << "the withheld tensor completed before its holder submitted it";

  if (me() == holder) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    Work w = hvd::allreduce_async(hvd::view(held), "ps.held", ReduceOp::kSum, 1, 1, blocked_set);
    EXPECT_NO_THROW(w.wait(kPatience()));
  }
  if (me() == waiter) {
    EXPECT_NO_THROW(held_work.wait(kPatience()));
    EXPECT_EQ(held[7], static_cast<float>(waiter + 1 + holder + 1));
  }
  hvd::barrier();
}

// Disjoint sets: evens wait for rank 2 while the odds work (np >= 3).
TEST(ProcessSets, DisjointSetProgressesWhileAnotherWaits) {
  if (world() < 3) GTEST_SKIP() << "needs a two-member set and a disjoint one";
  expect_progress_while_blocked(ranks_with_parity(0), 0, 2, ranks_with_parity(1));
}

// Overlapping sets: rank 0 waits on {0, 1} for rank 1 while it works on
// {0, 2, ...} (np >= 3).
TEST(ProcessSets, OverlappingSetProgressesWhileAnotherWaits) {
  if (world() < 3) GTEST_SKIP() << "needs two overlapping sets besides the global one";
  std::vector<int> others = ranks_in(2, world());
  others.insert(others.begin(), 0);
  expect_progress_while_blocked({0, 1}, 0, 1, others);
}

// ---- Timeout (runs last: it leaves the process-set channel unusable) --------------

// The last rank never calls add_process_set: the others get hvd::Timeout
// within HOROVODCPP_PROCESS_SET_TIMEOUT_SECONDS, and later calls a
// BackendError; the global set keeps working. A fresh init() starts over.
TEST(ProcessSetsZ, RankThatNeverCallsGivesTimeout) {
  const int n = world();
  if (n < 2) GTEST_SKIP() << "needs a rank that does not call";
  hvd::shutdown();
  setenv("HOROVODCPP_PROCESS_SET_TIMEOUT_SECONDS", "0.5", 1);
  hvd::init();
  if (me() != n - 1) {
    const auto start = std::chrono::steady_clock::now();
    try {
      hvd::add_process_set({0});
      ADD_FAILURE() << "add_process_set without rank " << n - 1 << " did not throw";
    } catch (const hvd::Timeout& e) {
      EXPECT_NE(std::string(e.what()).find("add_process_set([0])"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "wrong error type: " << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
    EXPECT_THROW(hvd::add_process_set({0}), hvd::BackendError);
  }
  std::vector<std::int32_t> v(2, 1);
  hvd::allreduce(hvd::view(v), "ps.after.timeout", ReduceOp::kSum);
  EXPECT_EQ(v[0], n);
  hvd::shutdown();
  unsetenv("HOROVODCPP_PROCESS_SET_TIMEOUT_SECONDS");
  hvd::init();
  AddedSets added(std::vector<std::vector<int>>{{0}});
  EXPECT_EQ(hvd::process_sets().size(), 2u);
}

}  // namespace
}  // namespace hvdtest
