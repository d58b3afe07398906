// HOROVODCPP_AUTOTUNE=1 on a real job: rank 0 tries fusion thresholds and
// cycle times while steps run, every rank switches at the same cycle (so
// fused results stay right at every step), and rank 0 logs every sample and
// the final choice to HOROVODCPP_AUTOTUNE_LOG. Run with a short warm-up and
// samples (see test/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "horovodcpp/horovodcpp.h"
#include "test_helpers.h"

namespace hvdtest {
namespace {

int my_rank() { return hvd::rank(); }
int world() { return hvd::size(); }

TEST(AutotuneTest, StepsStayCorrectWhileTuningAndRankZeroLogsTheSearch) {
  const char* log_path = std::getenv("HOROVODCPP_AUTOTUNE_LOG");
  ASSERT_NE(log_path, nullptr) << "run with HOROVODCPP_AUTOTUNE_LOG set";
  // Tensors of 4 KiB to 1 MiB: which of them fuse depends on the threshold.
  const std::vector<std::size_t> sizes = {1024, 4096, 65536, 262144, 1024, 16384};
  for (int step = 0; step < 150; ++step) {
    std::vector<std::vector<float>> grads(sizes.size());
    std::vector<hvd::Work> works;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      grads[i].assign(sizes[i], static_cast<float>(my_rank() + step + i));
      works.push_back(
          hvd::allreduce_async(hvd::view(grads[i]), "tune." + std::to_string(i), ReduceOp::kSum));
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      works[i].wait(kPatience());
      const float expected =
          static_cast<float>(world() * (world() - 1) / 2 + world() * static_cast<int>(step + i));
      ASSERT_EQ(grads[i].front(), expected) << "step " << step << " tensor " << i;
      ASSERT_EQ(grads[i].back(), expected) << "step " << step << " tensor " << i;
    }
  }
  hvd::barrier();
  if (my_rank() != 0) return;
  std::ifstream log(log_path);
  ASSERT_TRUE(log) << "rank 0 wrote no autotune log at " << log_path;
  std::string header, line, last;
  std::getline(log, header);
  EXPECT_EQ(header,
            "sample,phase,fusion_threshold_bytes,cycle_time_ms,bytes,seconds,"
            "throughput_bytes_per_s");
  int warmup = 0, trial = 0, final_rows = 0;
  while (std::getline(log, line)) {
    if (line.find(",warmup,") != std::string::npos) ++warmup;
    if (line.find(",trial,") != std::string::npos) ++trial;
    if (line.find(",final,") != std::string::npos) ++final_rows;
    last = line;
  }
  EXPECT_EQ(warmup, 1);
  EXPECT_GE(trial, 5) << "both knobs should have been tried";
  EXPECT_EQ(final_rows, 1) << "tuning did not finish; last row: " << last;
}

}  // namespace
}  // namespace hvdtest
