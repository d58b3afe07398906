// join(): ranks with fewer batches join early; the others' allreduces (any
// op) go on with zeros from the joined ranks, and Average divides by every
// rank, as in Horovod.
//
//   JoinTest           any number of ranks
//   MultiRankJoinTest  needs >= 2 ranks (excluded on 1 rank)
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "horovodcpp/horovodcpp.h"
#include "test_helpers.h"

namespace hvdtest {
namespace {

int my_rank() { return hvd::rank(); }
int world() { return hvd::size(); }

// Rank r has 2 + r batches: rank size-1 has the most and must join last
// (nothing it submits after the others' last batch can complete until they
// have joined).
int batches_of(int rank) { return 2 + rank; }

TEST(JoinTest, UnevenBatchesAverageOverEveryRank) {
  for (int step = 0; step < batches_of(my_rank()); ++step) {
    // The same names every step: the steady state serves them from the
    // response cache until ranks join, then rank 0 negotiates them.
    std::vector<float> grad(5, static_cast<float>(my_rank() + 1));
    std::vector<std::int32_t> count = {1, my_rank()};
    hvd::allreduce(hvd::view(grad), "join.grad", ReduceOp::kAverage);
    hvd::allreduce(hvd::view(count), "join.count", ReduceOp::kSum);

    int active = 0, value_sum = 0, rank_sum = 0;
    for (int r = 0; r < world(); ++r) {
      if (batches_of(r) > step) {
        ++active;
        value_sum += r + 1;
        rank_sum += r;
      }
    }
    for (float g : grad) {
      EXPECT_FLOAT_EQ(g, static_cast<float>(value_sum) / world()) << "step " << step;
    }
    EXPECT_EQ(count[0], active) << "step " << step;
    EXPECT_EQ(count[1], rank_sum) << "step " << step;
  }
  EXPECT_EQ(hvd::join(), world() - 1);
  // Everyone is back: the next allreduce includes every rank again.
  std::vector<std::int32_t> all = {1};
  hvd::allreduce(hvd::view(all), "join.after", ReduceOp::kSum);
  EXPECT_EQ(all[0], world());
}

TEST(JoinTest, RoundsOfJoinRepeat) {
  for (int round = 0; round < 3; ++round) {
    const int last = round % world();
    // Rank `last` runs one more allreduce, which completes only once the
    // others have joined, so it joins last.
    if (my_rank() == last) {
      std::vector<std::int32_t> alone = {1};
      hvd::allreduce(hvd::view(alone), "join.round." + std::to_string(round), ReduceOp::kSum);
      EXPECT_EQ(alone[0], 1);
    }
    EXPECT_EQ(hvd::join(), last) << "round " << round;
  }
}

// Barriers run while ranks have joined (the joined ones do not call them);
// afterwards every rank's barriers still meet: a barrier's name does not
// count the barriers this rank called.
TEST(JoinTest, BarriersDuringAndAfterAJoin) {
  const int last = world() - 1;
  if (my_rank() == last) {
    for (int i = 0; i < 3; ++i) hvd::barrier();  // alone: the others have joined
  }
  EXPECT_EQ(hvd::join(), last);
  for (int i = 0; i < 2; ++i) hvd::barrier();
  std::vector<std::int32_t> all = {1};
  hvd::allreduce(hvd::view(all), "join.after.barriers", ReduceOp::kSum);
  EXPECT_EQ(all[0], world());
}

TEST(JoinTest, FusedAllreducesWithJoinedRanks) {
  // Several tensors of one step fuse into one buffer; the joined ranks'
  // zeros and the divisor must apply to each of them.
  if (my_rank() == 0) {
    EXPECT_EQ(hvd::join(), world() - 1 > 0 ? 1 : 0);
    return;
  }
  std::vector<std::vector<double>> grads;
  std::vector<hvd::Work> works;
  for (int i = 0; i < 4; ++i) grads.emplace_back(3 + i, 10.0 * my_rank() + i);
  for (int i = 0; i < 4; ++i) {
    works.push_back(hvd::allreduce_async(hvd::view(grads[i]), "join.fused." + std::to_string(i)));
  }
  for (auto& w : works) w.wait(kPatience());
  // Rank 0 adds zeros; Average divides by every rank.
  for (int i = 0; i < 4; ++i) {
    double sum = 0;
    for (int r = 1; r < world(); ++r) sum += 10.0 * r + i;
    for (double g : grads[i]) EXPECT_DOUBLE_EQ(g, sum / world()) << "tensor " << i;
  }
  // Rank 1 joins last: it repeats a Sum until only its own value is in it,
  // i.e. every other rank has joined.
  if (my_rank() == 1) {
    std::vector<std::int32_t> token = {0};
    for (int tries = 0; tries < 1000; ++tries) {
      token[0] = 1;
      hvd::allreduce(hvd::view(token), "join.token", ReduceOp::kSum);
      if (token[0] == 1) break;
    }
  } else {
    std::vector<std::int32_t> token = {1};
    hvd::allreduce(hvd::view(token), "join.token", ReduceOp::kSum);
  }
  EXPECT_EQ(hvd::join(), 1);
}

TEST(MultiRankJoinTest, EveryDtypeSumsAndAveragesWithZerosFromTheJoinedRank) {
  // The last rank joins at once; ranks 0..size-2 reduce every dtype. Their
  // inputs are those of a job of size-1 ranks, so that job's sums hold;
  // Average divides them by every rank, the joined one included.
  if (my_rank() == world() - 1) {
    EXPECT_EQ(hvd::join(), 0);
    return;
  }
  const int training = world() - 1;
  for (DataType dtype : all_dtypes()) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
      if (op == ReduceOp::kAverage && dtype == DataType::kBool) continue;  // not defined
      const std::string name =
          std::string("join.dtype.") + hvd::dtype_name(dtype) + "." + hvd::reduce_op_name(op);
      const Pattern p = pattern_for(op, dtype);
      const std::uint64_t salt = salt_of(name);
      Buffer buffer(dtype, {37});
      buffer.fill(p, salt, my_rank());
      auto error = error_of([&] { return hvd::allreduce_async(buffer.view(), name, op); });
      ASSERT_FALSE(error) << name << ": " << error_message(error);
      check_allreduce(buffer, op, p, salt, training, 1.0, 1.0, name, world());
    }
  }
  if (my_rank() != 0) {
    EXPECT_EQ(hvd::join(), 0);
    return;
  }
  for (int tries = 0; tries < 1000; ++tries) {  // rank 0 joins last
    std::vector<std::int32_t> alone = {1};
    hvd::allreduce(hvd::view(alone), "join.dtype.alone", ReduceOp::kSum);
    if (alone[0] == 1) break;
  }
  EXPECT_EQ(hvd::join(), 0);
}

TEST(MultiRankJoinTest, AllreducesTakeZerosOtherCollectivesFail) {
  if (my_rank() == world() - 1) {
    EXPECT_EQ(hvd::join(), 0);
    return;
  }
  // Min, Max and Product see the joined rank's zeros, as in Horovod.
  std::vector<float> t = {-1, 2};
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    std::vector<float> r = t;
    hvd::allreduce(hvd::view(r), std::string("join.") + hvd::reduce_op_name(op), op);
    const std::vector<float> expected = op == ReduceOp::kMin   ? std::vector<float>{-1, 0}
                                        : op == ReduceOp::kMax ? std::vector<float>{0, 2}
                                                               : std::vector<float>{0, 0};
    EXPECT_EQ(r, expected) << hvd::reduce_op_name(op);
  }
  auto gather_error = error_of([&] { return hvd::allgather_async(hvd::view(t), "join.gather"); });
  expect_error<hvd::InvalidArgument>(gather_error, {"join.gather", "allgather", "joined"},
                                     {world() - 1}, "allgather after a rank joined");
  // Sum still works, then the others join; rank 0 last.
  std::vector<std::int32_t> sum = {1};
  hvd::allreduce(hvd::view(sum), "join.sum", ReduceOp::kSum);
  EXPECT_EQ(sum[0], world() - 1);
  if (my_rank() != 0) {
    EXPECT_EQ(hvd::join(), 0);
    return;
  }
  // Rank 0 waits until the other training ranks have joined.
  for (int tries = 0; tries < 1000; ++tries) {
    std::vector<std::int32_t> alone = {1};
    hvd::allreduce(hvd::view(alone), "join.alone", ReduceOp::kSum);
    if (alone[0] == 1) break;
  }
  EXPECT_EQ(hvd::join(), 0);
}

}  // namespace
}  // namespace hvdtest
