// The timeline under a real job: rank 0 writes a Chrome-trace file with each
// tensor's negotiation (every rank's arrival), fusion copies and backend op;
// the other ranks write nothing. Its own binary: it starts and stops the
// timeline of the job-wide runtime.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../harness/timeline_file.h"
#include "horovodcpp/horovodcpp.h"

namespace {

using hvd::test::read_file;
using hvd::test::valid_json;

// Horovod's HOROVOD_TIMELINE=DYNAMIC (ctest's timeline_tests_dynamic_*): init()
// writes no timeline (before, rank 0 wrote one to a file named "DYNAMIC" in
// the working directory); the other tests then start and stop it at run time.
TEST(Timeline, DynamicStartsNoTimelineAtInit) {
  const char* setting = std::getenv("HOROVOD_TIMELINE");
  if (setting == nullptr || std::string(setting) != "DYNAMIC") {
    GTEST_SKIP() << "runs with HOROVOD_TIMELINE=DYNAMIC";
  }
  hvd::barrier();
  if (hvd::rank() != 0) return;
  std::FILE* file = std::fopen("DYNAMIC", "r");
  EXPECT_EQ(file, nullptr) << "init() wrote a timeline to ./DYNAMIC";
  if (file != nullptr) {
    std::fclose(file);
    std::remove("DYNAMIC");
  }
}

TEST(Timeline, RankZeroWritesNegotiationFusionAndOps) {
  // Rank 0's pid names the file on every rank (rank 0 alone writes it).
  std::vector<int> pid{static_cast<int>(::getpid())};
  hvd::broadcast(hvd::TensorView(pid.data(), hvd::DataType::kInt32, {1}), 0, "timeline.pid");
  const std::string path = "/tmp/hvd_timeline_test_" + std::to_string(pid[0]) + ".json";

  hvd::start_timeline(path, /*mark_cycles=*/true);
  for (int step = 0; step < 3; ++step) {
    std::vector<std::vector<float>> grads(4, std::vector<float>(1000, 1.0f));
    std::vector<hvd::Work> works;
    for (std::size_t i = 0; i < grads.size(); ++i) {
      works.push_back(
          hvd::allreduce_async(hvd::TensorView(grads[i].data(), hvd::DataType::kFloat32,
                                               {static_cast<std::int64_t>(grads[i].size())}),
                               "timeline.grad." + std::to_string(i), hvd::ReduceOp::kSum));
    }
    for (hvd::Work& work : works) work.wait();
    for (const auto& grad : grads) ASSERT_FLOAT_EQ(grad[0], static_cast<float>(hvd::size()));
    // One alone (not fused) and a broadcast.
    std::vector<float> lone(10, 2.0f);
    hvd::allreduce(hvd::TensorView(lone.data(), hvd::DataType::kFloat32, {10}), "timeline.lone",
                   hvd::ReduceOp::kSum);
  }
  hvd::stop_timeline();
  hvd::barrier();

  if (hvd::rank() != 0) return;  // only rank 0 writes
  const std::string text = read_file(path);
  EXPECT_TRUE(valid_json(path)) << text.substr(0, 2000);
  EXPECT_NE(text.find("\"NEGOTIATE\""), std::string::npos);
  EXPECT_NE(text.find("\"QUEUE\""), std::string::npos);
  for (int r = 0; r < hvd::size(); ++r) {
    EXPECT_NE(text.find("\"rank " + std::to_string(r) + " ready\""), std::string::npos) << r;
  }
  EXPECT_NE(text.find("\"MEMCPY_IN_FUSION_BUFFER\""), std::string::npos);
  EXPECT_NE(text.find("\"MEMCPY_OUT_FUSION_BUFFER\""), std::string::npos);
  EXPECT_NE(text.find("_ALLREDUCE\""), std::string::npos);
  EXPECT_NE(text.find("CYCLE_START"), std::string::npos);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NE(text.find("\"timeline.grad." + std::to_string(i) + "\""), std::string::npos) << i;
  }
  EXPECT_NE(text.find("\"timeline.lone\""), std::string::npos);
  std::remove(path.c_str());
}

// A lone blocking allreduce served from the response cache goes inline
// where the control plane carries data (shared memory: every rank on this
// host, the response cache on); elsewhere the backend runs it.
TEST(Timeline, LoneCachedAllreduceGoesInlineOverSharedMemory) {
  std::vector<int> pid{static_cast<int>(::getpid())};
  hvd::broadcast(hvd::TensorView(pid.data(), hvd::DataType::kInt32, {1}), 0, "timeline.pid");
  const std::string path = "/tmp/hvd_timeline_inline_" + std::to_string(pid[0]) + ".json";
  hvd::start_timeline(path);
  for (int call = 0; call < 4; ++call) {
    std::vector<float> lone(10, 2.0f);
    hvd::allreduce(hvd::TensorView(lone.data(), hvd::DataType::kFloat32, {10}), "timeline.inline",
                   hvd::ReduceOp::kSum);
    ASSERT_FLOAT_EQ(lone[9], 2.0f * hvd::size());
  }
  hvd::stop_timeline();
  hvd::barrier();
  if (hvd::rank() != 0) return;
  const char* capacity = std::getenv("HOROVODCPP_CACHE_CAPACITY");
  const bool carried = hvd::size() > 1 && hvd::local_size() == hvd::size() &&
                       hvd::backend_name() == "shm" &&
                       (capacity == nullptr || std::string(capacity) != "0");
  const std::string text = read_file(path);
  EXPECT_EQ(text.find("\"INLINE_ALLREDUCE\"") != std::string::npos, carried)
      << "backend " << hvd::backend_name() << ", " << hvd::size() << " ranks; "
      << text.substr(0, 2000);
  std::remove(path.c_str());
}

TEST(Timeline, StopWithoutStartAndRestartAreSafe) {
  hvd::stop_timeline();
  const std::string path = "/tmp/hvd_timeline_restart_" + std::to_string(::getpid()) + ".json";
  hvd::start_timeline(path);
  std::vector<float> x(8, 1.0f);
  hvd::allreduce(hvd::TensorView(x.data(), hvd::DataType::kFloat32, {8}), "timeline.restart");
  hvd::stop_timeline();
  hvd::stop_timeline();
  if (hvd::rank() == 0) {
    EXPECT_TRUE(valid_json(path));
    EXPECT_NE(read_file(path).find("timeline.restart"), std::string::npos);
  }
  std::remove(path.c_str());
}

}  // namespace
