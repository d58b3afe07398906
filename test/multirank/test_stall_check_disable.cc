// HOROVOD_STALL_CHECK_DISABLE=1 end to end (>= 2 ranks; ctest also sets
// stall check and shutdown times of 1 and 2 s): the last rank submits its
// tensor 4 s after the others, longer than the shutdown time, and every rank
// still gets the right sum, because disabling the check disables the
// shutdown too (as in Horovod).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "horovodcpp/horovodcpp.h"

namespace {

TEST(StallCheckDisable, LateTensorCompletesPastTheShutdownTime) {
  if (hvd::size() < 2) GTEST_SKIP() << "needs >= 2 ranks";
  if (hvd::rank() == hvd::size() - 1) std::this_thread::sleep_for(std::chrono::seconds(4));
  std::vector<float> data(4, 1.0f);
  hvd::Work work = hvd::allreduce_async(hvd::view(data), "late", hvd::ReduceOp::kSum);
  work.wait(std::chrono::seconds(30));  // bounded: a hang fails with hvd::Timeout
  for (float x : data) EXPECT_EQ(x, static_cast<float>(hvd::size()));
}

}  // namespace
