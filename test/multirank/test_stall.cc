// The stall inspector end to end (>= 2 ranks; ctest sets
// HOROVODCPP_STALL_CHECK_TIME_SECONDS=1 and
// HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS=3). The last rank withholds tensor
// "withheld" that every other rank submits, and submits "other" that nobody
// else does. Every rank's pending wait must fail with hvd::RankFailure
// naming the withheld tensor and the rank missing it, within a few seconds.
//
// The stall error stops the runtime on every rank, so this is the only test
// of its binary; main() still calls hvd::shutdown() afterwards.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "horovodcpp/horovodcpp.h"

namespace {

using std::chrono::steady_clock;

TEST(StallTest, WithheldTensorFailsEveryRankWithTheStallError) {
  if (hvd::size() < 2) GTEST_SKIP() << "needs >= 2 ranks";
  const int rank = hvd::rank(), last = hvd::size() - 1;
  std::vector<float> data(4, 1.0f);

  const auto start = steady_clock::now();
  const std::string mine = rank == last ? "other" : "withheld";
  hvd::Work work = hvd::allreduce_async(hvd::view(data), mine, hvd::ReduceOp::kSum);

  std::string message;
  try {
    work.wait(std::chrono::seconds(30));  // bounded: a broken inspector fails, never hangs
    ADD_FAILURE() << "'" << mine << "' completed although rank " << last << " withheld 'withheld'";
  } catch (const hvd::Timeout&) {
    ADD_FAILURE() << "no stall error within 30 s on rank " << rank;
  } catch (const hvd::RankFailure& e) {
    message = e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type on rank " << rank << ": " << e.what();
  }
  const double elapsed = std::chrono::duration<double>(steady_clock::now() - start).count();

  if (!message.empty()) {
    EXPECT_NE(message.find("'withheld'"), std::string::npos) << message;
    EXPECT_NE(message.find("missing on rank " + std::to_string(last)), std::string::npos)
        << message;
    EXPECT_NE(message.find("'other'"), std::string::npos) << message;
    EXPECT_NE(message.find("HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS"), std::string::npos) << message;
    EXPECT_LT(elapsed, 10.0) << "the stall error came after " << elapsed << " s";
    EXPECT_GE(elapsed, 2.0) << "the stall error came before the shutdown time";

    // The runtime has stopped: later submissions fail at once with the same error.
    try {
      hvd::allreduce_async(hvd::view(data), "after.stall", hvd::ReduceOp::kSum);
      ADD_FAILURE() << "a submission after the stall error was accepted";
    } catch (const hvd::RankFailure& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
}

}  // namespace
