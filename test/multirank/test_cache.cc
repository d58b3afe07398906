// The response cache through the public API: the steady state (the same
// names every step) gives the same results as negotiation, a tensor whose
// shape or dtype changes is renegotiated, and a rank whose cached tensor
// changes alone gets the mismatch error like any other.
//
//   CacheTest          any number of ranks
//   MismatchCacheTest  needs >= 2 ranks (excluded on 1 rank)
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

int sum_of_ranks() { return world() * (world() - 1) / 2; }

TEST(CacheTest, SteadyStateStepsGiveTheNegotiatedResults) {
  // Each rank submits the step's tensors in its own order, asynchronously.
  const int tensors = 6;
  for (int step = 0; step < 30; ++step) {
    std::vector<std::vector<std::int64_t>> data(tensors);
    std::vector<hvd::Work> works(tensors);
    for (int k = 0; k < tensors; ++k) {
      const int i = (k + my_rank()) % tensors;
      data[i].assign(4 + i, static_cast<std::int64_t>(my_rank()) * step + i);
      works[i] = hvd::allreduce_async(hvd::view(data[i]), "cache.steady." + std::to_string(i),
                                      ReduceOp::kSum);
    }
    for (int i = 0; i < tensors; ++i) {
      works[i].wait(kPatience());
      for (std::int64_t v : data[i]) {
        ASSERT_EQ(v, static_cast<std::int64_t>(sum_of_ranks()) * step + world() * i)
            << "step " << step << " tensor " << i;
      }
    }
  }
}

TEST(CacheTest, ChangedShapeOrDtypeIsRenegotiated) {
  for (int step = 0; step < 4; ++step) {
    std::vector<float> small(3, 1.0f);
    hvd::allreduce(hvd::view(small), "cache.reshaped", ReduceOp::kSum);
    for (float v : small) EXPECT_FLOAT_EQ(v, world());
  }
  std::vector<float> large(7, 2.0f);
  hvd::allreduce(hvd::view(large), "cache.reshaped", ReduceOp::kSum);
  for (float v : large) EXPECT_FLOAT_EQ(v, 2.0f * world());
  std::vector<double> retyped(7, 0.5);
  hvd::allreduce(hvd::view(retyped), "cache.reshaped", ReduceOp::kSum);
  for (double v : retyped) EXPECT_DOUBLE_EQ(v, 0.5 * world());
  // Other operations keep their cached entries apart by name.
  for (int step = 0; step < 3; ++step) {
    std::vector<std::int32_t> b = {my_rank() == 0 ? 42 + step : -1};
    hvd::broadcast(hvd::view(b), 0, "cache.bcast");
    EXPECT_EQ(b[0], 42 + step);
    std::vector<std::int32_t> mine = {my_rank()};
    hvd::Tensor all = hvd::allgather(hvd::view(mine), "cache.gather");
    ASSERT_EQ(all.num_elements(), world());
    for (int r = 0; r < world(); ++r) EXPECT_EQ(all.data_as<std::int32_t>()[r], r);
  }
}

TEST(MismatchCacheTest, ACachedTensorChangedOnOneRankFailsOnEveryRank) {
  for (int step = 0; step < 3; ++step) {
    std::vector<float> t(4, 1.0f);
    hvd::allreduce(hvd::view(t), "cache.mismatch", ReduceOp::kSum);
  }
  // Rank 1 changes the shape of a tensor every rank has cached.
  std::vector<float> t(my_rank() == 1 ? 5 : 4, 1.0f);
  auto error = error_of(
      [&] { return hvd::allreduce_async(hvd::view(t), "cache.mismatch", ReduceOp::kSum); });
  expect_error<hvd::Mismatch>(error, {"cache.mismatch", "shape"}, {1}, "changed cached tensor");
  // And the next step works again.
  std::vector<float> again(4, 1.0f);
  hvd::allreduce(hvd::view(again), "cache.mismatch", ReduceOp::kSum);
  for (float v : again) EXPECT_FLOAT_EQ(v, world());
}

}  // namespace
}  // namespace hvdtest
