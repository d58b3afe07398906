// The coordinator's pacing, with a recording stand-in for the device (no
// GPU) and for the CPU backend, one rank: tensors submitted one after the
// other within a cycle, as a backward pass hands over its gradients, reach
// the device (or the backend) as one fused batch, not one batch each; a
// thread waiting for a tensor starts a cycle at once, and so does a burst
// that fills the fusion buffer. The cycle time is long here, so that a
// loaded machine pausing the submitting thread cannot split the burst.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "coordinator_test_helpers.h"
#include "core/runtime/coordinator.h"
#include "counting_backend.h"
#include "horovodcpp/work.h"

namespace hvd {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// One rank. While its gate is closed, a cycle's full round holds in
// gather_to_root.
class SoloController : public Controller {
 public:
  const Topology& topology() const override { return topology_; }
  std::vector<std::string> gather_to_root(const std::string& message) override {
    std::unique_lock<std::mutex> lock(mutex_);
    ++held_at_gate;
    gate_.wait(lock, [&] { return open_; });
    --held_at_gate;
    return {message};
  }
  std::string broadcast_from_root(const std::string& message) override { return message; }
  void bitwise_and(std::vector<std::uint64_t>&) override { ++bit_exchanges; }

  void set_gate(bool open) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = open;
    }
    gate_.notify_all();
  }
  std::atomic<int> bit_exchanges{0};
  std::atomic<int> held_at_gate{0};

 private:
  Topology topology_;
  std::mutex mutex_;
  std::condition_variable gate_;
  bool open_ = true;
};

// Records how many tensors each allreduce it is given holds, and completes them.
class RecordingDevice : public DeviceOperations {
 public:
  const char* name() const override { return "recording"; }
  std::shared_ptr<void> record_ready(const TensorView&) override { return nullptr; }
  void allreduce(const std::vector<const TensorEntry*>& group, int) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      batches_.push_back(group.size());
    }
    for (const TensorEntry* entry : group) entry->work->complete();
  }
  void broadcast(const TensorEntry& entry) override { entry.work->complete(); }
  std::vector<std::size_t> batches() {
    std::lock_guard<std::mutex> lock(mutex_);
    return batches_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::size_t> batches_;
};

class BurstFusionTest : public ::testing::Test {
 protected:
  void start(microseconds cycle_time, std::size_t fusion_threshold) {
    CoordinatorSettings settings;
    settings.cycle_time = cycle_time;
    settings.fusion_threshold = fusion_threshold;
    settings.cache_capacity = 1024;
    coordinator_ = std::make_unique<Coordinator>(controller_, backend_, queue_, settings, nullptr,
                                                 true, &device_);
    coordinator_->start();
  }
  void TearDown() override {
    if (coordinator_) coordinator_->stop();
  }

  // Submits an allreduce of `elements` floats (on the "GPU" or the CPU) as
  // the API does.
  Work submit(const std::string& name, std::size_t elements, DeviceType device) {
    TensorEntry submission = allreduce_entry(name, elements, device);
    Work work(submission.work);
    queue_.push(std::move(submission));
    return work;
  }

  TensorEntry allreduce_entry(const std::string& name, std::size_t elements, DeviceType device) {
    return hvd::allreduce_entry(queue_, name, buffers_.emplace_back(elements, 1.0f),
                                device == DeviceType::kCUDA ? Device::cuda(0) : Device::cpu());
  }

  // A backward pass: `count` tensors handed over `gap` apart, then waited for.
  void backward_pass(int count, microseconds gap, DeviceType device) {
    std::vector<Work> works;
    for (int i = 0; i < count; ++i) {
      works.push_back(submit("grad." + std::to_string(i), 1000, device));
      std::this_thread::sleep_for(gap);
    }
    for (Work& work : works) work.wait(milliseconds(10000));
  }

  SoloController controller_;
  CountingBackend backend_;
  RecordingDevice device_;
  TensorQueue queue_;
  std::unique_ptr<Coordinator> coordinator_;
  std::deque<std::vector<float>> buffers_;
};

std::size_t total(const std::vector<std::size_t>& batches) {
  std::size_t sum = 0;
  for (std::size_t n : batches) sum += n;
  return sum;
}

// 32 CUDA tensors 100 us apart (3 ms in all, well within the 10 s cycle
// even on a loaded machine) reach the device as one fused batch; at most
// two, if the cycle that was due came in the middle. One batch each before
// the pacing.
TEST_F(BurstFusionTest, ABackwardPassOfCudaTensorsIsFusedIntoOneOrTwoBatches) {
  start(std::chrono::seconds(10), 64 << 20);
  backward_pass(32, microseconds(100), DeviceType::kCUDA);
  const std::vector<std::size_t> batches = device_.batches();
  EXPECT_EQ(total(batches), 32u);
  EXPECT_LE(batches.size(), 2u) << "tensors per batch: " << ::testing::PrintToString(batches);
}

// The same for CPU tensors: one or two backend allreduces for 32 tensors.
TEST_F(BurstFusionTest, ABackwardPassOfCpuTensorsIsFusedIntoOneOrTwoCollectives) {
  start(std::chrono::seconds(10), 64 << 20);
  backward_pass(32, microseconds(100), DeviceType::kCPU);
  EXPECT_GE(backend_.allreduces.load(), 1);
  EXPECT_LE(backend_.allreduces.load(), 2);
}

// A thread that waits does not wait for the cycle time (an hour here).
TEST_F(BurstFusionTest, ALoneTensorThatIsWaitedForGoesOutAtOnce) {
  start(std::chrono::hours(1), 64 << 20);
  Work work = submit("lone", 10, DeviceType::kCUDA);
  EXPECT_NO_THROW(work.wait(milliseconds(10000)));
  EXPECT_EQ(device_.batches(), std::vector<std::size_t>{1});
}

// A thread that waits while another thread runs the cycles (help), for a
// tensor submitted after those cycles took theirs, is served as soon as
// the other thread leaves: the coordinator's thread takes over at once,
// not at its next paced cycle (an hour here).
TEST_F(BurstFusionTest, AThreadWaitingBehindAHelperIsServedWhenItLeaves) {
  start(std::chrono::hours(1), 64 << 20);
  // The coordinator's first cycle has run; then it sleeps for the hour.
  ASSERT_TRUE(eventually([&] { return controller_.bit_exchanges.load() >= 1; }));
  std::this_thread::sleep_for(milliseconds(50));
  controller_.set_gate(false);
  Work first = submit("first", 10, DeviceType::kCPU);
  std::thread helper([&] { EXPECT_NO_THROW(first.wait(milliseconds(10000))); });
  // Its thread runs the cycle, which holds in the full round ...
  ASSERT_TRUE(eventually([&] { return controller_.held_at_gate.load() == 1; }));
  Work second = submit("second", 10, DeviceType::kCPU);
  std::thread waiter([&] { EXPECT_NO_THROW(second.wait(milliseconds(10000))); });
  // ... while the second tensor's thread waits without running cycles.
  ASSERT_TRUE(eventually([&] { return queue_.wakeup()->waiters() == 1; }));
  controller_.set_gate(true);
  helper.join();
  waiter.join();
  EXPECT_TRUE(second.poll());
  EXPECT_EQ(backend_.allreduces.load(), 2);
}

// Submissions that together fill the fusion buffer go out without anyone
// waiting. (Handed over in one call: one at a time, the coordinator's own
// first cycle may take the first few, and the rest then waits for the next.)
TEST_F(BurstFusionTest, ABurstThatFillsTheFusionBufferGoesOutAtOnce) {
  start(std::chrono::hours(1), 4 * 1000 * sizeof(float));
  std::vector<TensorEntry> burst;
  std::vector<Work> works;
  for (int i = 0; i < 4; ++i) {
    burst.push_back(allreduce_entry("full." + std::to_string(i), 1000, DeviceType::kCUDA));
    works.emplace_back(burst.back().work);
  }
  queue_.push_all(std::move(burst));
  ASSERT_TRUE(eventually([&] { return works.back().poll(); }))
      << "nobody waited, and the full buffer did not go out";
  EXPECT_EQ(device_.batches(), std::vector<std::size_t>{4});
}

// Without anyone waiting, submissions go out at the next cycle.
TEST_F(BurstFusionTest, UnwaitedSubmissionsGoOutAtTheNextCycle) {
  start(milliseconds(20), 64 << 20);
  Work work = submit("unwaited", 10, DeviceType::kCPU);
  EXPECT_TRUE(eventually([&] { return work.poll(); }));
}

// stop() does not wait for the cycle time (an hour) to end the coordinator.
TEST_F(BurstFusionTest, StopEndsTheCoordinatorWithoutWaitingForTheCycle) {
  start(std::chrono::hours(1), 64 << 20);
  Work pending = submit("pending", 10, DeviceType::kCPU);
  coordinator_->stop();
  EXPECT_TRUE(pending.poll());
}

}  // namespace
}  // namespace hvd
