// The coordinator's thread while the rank's own thread runs the cycles (a
// loop of blocking collectives, one rank): it goes dormant instead of
// waking every cycle time, and stays asleep while the loop goes on; a
// submission nobody waits for wakes it, and the burst that submission
// begins still goes out as one fused collective.
#include <dirent.h>
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "coordinator_test_helpers.h"
#include "core/runtime/coordinator.h"
#include "counting_backend.h"
#include "horovodcpp/work.h"

namespace hvd {
namespace {

using std::chrono::milliseconds;

// How many times this process's thread named `name` has gone to sleep
// (voluntary context switches, from /proc); -1 if there is no such thread.
long sleeps_of_thread(const std::string& name) {
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return -1;
  long sleeps = -1;
  while (dirent* task = readdir(tasks)) {
    const std::string dir = std::string("/proc/self/task/") + task->d_name;
    std::string comm;
    std::getline(std::ifstream(dir + "/comm"), comm);
    if (comm != name) continue;
    std::ifstream status(dir + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) sleeps = std::stol(line.substr(24));
    }
  }
  closedir(tasks);
  return sleeps;
}

class CoordinatorDormancyTest : public ::testing::Test {
 protected:
  void start(std::chrono::microseconds cycle_time) {
    CoordinatorSettings settings;
    settings.cycle_time = cycle_time;
    settings.dormant_look = std::chrono::hours(1);  // only a submission ends it
    settings.fusion_threshold = 64 << 20;
    settings.cache_capacity = 1024;
    coordinator_ = std::make_unique<Coordinator>(controller_, backend_, queue_, settings);
    coordinator_->start();
  }
  void TearDown() override {
    if (coordinator_) coordinator_->stop();
  }

  Work submit(const std::string& name, bool caller_waits) {
    TensorEntry entry = allreduce_entry(queue_, name, buffers_.emplace_back(4, 1.0f));
    Work work(entry.work);
    queue_.push(std::move(entry), caller_waits);
    return work;
  }
  // One blocking allreduce, as ProcessSetRuntime::run_blocking queues it:
  // the waiting thread runs the cycle (help).
  void blocking_allreduce() { submit("loss", true).wait(milliseconds(10000)); }

  // Runs blocking allreduces until the coordinator's thread is dormant (at
  // most 10 s); false if it never was.
  bool loop_until_dormant() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!queue_.wakeup()->dormant()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      blocking_allreduce();  // back to back: a look between two finds them run
    }
    return true;
  }

  // Polls `work` without waiting on it (a wait would run the cycles).
  static bool completes_unwaited(const Work& work) {
    return eventually([&] { return work.poll(); });
  }

  SoloController controller_;
  CountingBackend backend_;
  TensorQueue queue_;
  std::unique_ptr<Coordinator> coordinator_;
  std::deque<std::vector<float>> buffers_;
};

// Before: the thread woke every cycle time (1 ms) for as long as the loop
// ran, only to find the loop's thread running the cycles.
TEST_F(CoordinatorDormancyTest, ALoopOfBlockingCollectivesLeavesItsThreadAsleep) {
  start(milliseconds(1));
  ASSERT_TRUE(loop_until_dormant());
  const long before = sleeps_of_thread("hvd-coordinator");
  ASSERT_GE(before, 0);
  const auto until = std::chrono::steady_clock::now() + milliseconds(200);
  int calls = 0;
  while (std::chrono::steady_clock::now() < until) {
    blocking_allreduce();
    ++calls;
  }
  EXPECT_LE(sleeps_of_thread("hvd-coordinator") - before, 1) << "over " << calls << " calls";
  EXPECT_TRUE(queue_.wakeup()->dormant());
}

TEST_F(CoordinatorDormancyTest, ASubmissionNobodyWaitsForWakesIt) {
  start(milliseconds(1));
  ASSERT_TRUE(loop_until_dormant());
  Work unwaited = submit("gradient", false);
  EXPECT_TRUE(completes_unwaited(unwaited)) << "still asleep, for its hour";
}

// The submission that wakes it, after the loop has ended, begins a burst:
// the cycle waits its cycle time (long here, so that a loaded machine
// cannot split the burst) for the rest, as Horovod's pacing does.
TEST_F(CoordinatorDormancyTest, TheBurstThatWakesItIsFused) {
  start(milliseconds(300));
  ASSERT_TRUE(loop_until_dormant());
  std::this_thread::sleep_for(milliseconds(400));  // the loop's last cycle is a cycle time ago
  const int before = backend_.allreduces.load();
  std::vector<Work> burst;
  for (int i = 0; i < 8; ++i) {  // a backward pass: 2 ms apart
    burst.push_back(submit("grad." + std::to_string(i), false));
    std::this_thread::sleep_for(milliseconds(2));
  }
  for (const Work& work : burst) ASSERT_TRUE(completes_unwaited(work));
  EXPECT_EQ(backend_.allreduces.load() - before, 1);
}

}  // namespace
}  // namespace hvd
