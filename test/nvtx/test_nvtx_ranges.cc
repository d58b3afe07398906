// NVTX ranges (core/diagnostics/nvtx_ranges.h) as a profiler sees them:
// nvtx_recorder, an injection library loaded as Nsight Systems' is
// (NVTX_INJECTION64_PATH), records them. ctest runs this twice: as is, and
// NvtxRangesOff alone with HOROVODCPP_DISABLE_NVTX_RANGES=1.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "coordinator_test_helpers.h"
#include "core/diagnostics/nvtx_ranges.h"
#include "core/execution/timeline_span.h"
#include "core/runtime/coordinator.h"
#include "counting_backend.h"
#include "horovodcpp/work.h"

namespace hvd {
namespace {

// Before NVTX's first call: it looks for a profiler then, once.
void attach_recorder() { setenv("NVTX_INJECTION64_PATH", HVD_NVTX_RECORDER, 1); }

bool recorder_loaded() {
  void* library = dlopen(HVD_NVTX_RECORDER, RTLD_NOW | RTLD_NOLOAD);
  if (library != nullptr) dlclose(library);
  return library != nullptr;
}

// Everything the recorder saw: "start NAME" and "end" lines.
std::string recorded() {
  void* library = dlopen(HVD_NVTX_RECORDER, RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) return "(no profiler loaded)";
  std::string events;
  reinterpret_cast<void (*)(std::string*)>(dlsym(library, "nvtx_recorder_events"))(&events);
  dlclose(library);
  return events;
}

class NvtxRanges : public ::testing::Test {
 protected:
  void SetUp() override {
    attach_recorder();
    ASSERT_TRUE(nvtx_ranges_enabled());
    { const NvtxScope first("SETUP"); }  // NVTX loads the recorder here, if not yet
    before_ = recorded();
  }
  // What the recorder saw since SetUp.
  std::string seen() const { return recorded().substr(before_.size()); }

  std::string before_;
};

TEST_F(NvtxRanges, AScopeIsOneRange) {
  { const NvtxScope range("MEMCPY_IN_FUSION_BUFFER"); }
  EXPECT_EQ(seen(), "start MEMCPY_IN_FUSION_BUFFER\nend\n");
}

// A GPU collective's span ends on the completion poller's thread.
TEST_F(NvtxRanges, ATimelineSpanIsARangeEndedOnAnotherThread) {
  TensorQueue queue;
  std::vector<float> data(4, 1.0f);
  const TensorEntry entry = allreduce_entry(queue, "gradient", data);
  const TimelineSpan span(nullptr, "NCCL_ALLREDUCE", entry);  // no timeline recording
  EXPECT_EQ(seen(), "start NCCL_ALLREDUCE\n");
  std::thread([&] { span.end(); }).join();
  EXPECT_EQ(seen(), "start NCCL_ALLREDUCE\nend\n");
}

// The cycle that negotiates a submission is a range; idle cycles are not.
TEST_F(NvtxRanges, ACycleNegotiatingASubmissionIsARange) {
  SoloController controller;
  CountingBackend backend;
  TensorQueue queue;
  CoordinatorSettings settings;
  settings.cycle_time = std::chrono::milliseconds(1);
  settings.fusion_threshold = 64 << 20;
  settings.cache_capacity = 1024;
  Coordinator coordinator(controller, backend, queue, settings);
  coordinator.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // idle cycles
  EXPECT_EQ(seen(), "");
  std::vector<float> data(4, 1.0f);
  TensorEntry entry = allreduce_entry(queue, "gradient", data);
  const Work work(entry.work);
  queue.push(std::move(entry), false);
  EXPECT_TRUE(eventually([&] { return work.poll(); }));
  coordinator.stop();
  EXPECT_EQ(seen(), "start NEGOTIATE\nend\n");
}

TEST(NvtxRangesOff, NoRangeAndNoProfilerLoaded) {
  const char* disabled = std::getenv("HOROVODCPP_DISABLE_NVTX_RANGES");
  ASSERT_TRUE(disabled != nullptr && std::string(disabled) == "1")
      << "runs as the ctest nvtx_tests_off, which sets HOROVODCPP_DISABLE_NVTX_RANGES=1";
  attach_recorder();
  EXPECT_FALSE(nvtx_ranges_enabled());
  EXPECT_EQ(nvtx_range_start("NEGOTIATE"), 0u);
  { const NvtxScope range("MEMCPY_IN_FUSION_BUFFER"); }
  // Off, horovodcpp never calls NVTX: NVTX never looked for a profiler.
  EXPECT_FALSE(recorder_loaded());
}

}  // namespace
}  // namespace hvd
