// HOROVODCPP_THREAD_AFFINITY (Horovod's format): one CPU id per rank of the
// host; bad lists fail init() with a message naming the variable.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <string>
#include <thread>

#include "core/runtime/thread_affinity.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

int first_allowed_cpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof(allowed), &allowed);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) return cpu;
  }
  return -1;
}

std::string error_of(const std::string& list, int local_rank, int local_size) {
  try {
    thread_affinity_cpu(list, local_rank, local_size);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(ThreadAffinity, LocalRankPicksItsCpu) {
  const int cpu = first_allowed_cpu();
  const std::string list = "1023," + std::to_string(cpu) + ",1022";
  EXPECT_EQ(thread_affinity_cpu(list, 1, 3), cpu);
  // Extra ids are ignored, as in Horovod.
  EXPECT_EQ(thread_affinity_cpu(std::to_string(cpu) + ",1,2,3", 0, 1), cpu);
}

TEST(ThreadAffinity, BadListsSayWhatIsWrong) {
  EXPECT_EQ(error_of("0", 0, 2),
            "HOROVODCPP_THREAD_AFFINITY='0' names 1 CPU(s) for the 2 ranks of this host: give "
            "one per rank");
  for (const std::string bad : {"x", "-1", "", "1024"}) {
    EXPECT_EQ(error_of("0," + bad, 0, 2), "HOROVODCPP_THREAD_AFFINITY='0," + bad + "': '" + bad +
                                              "' is not a CPU id (a whole number from 0 to 1023)");
  }
  EXPECT_EQ(error_of("1000", 0, 1),
            "HOROVODCPP_THREAD_AFFINITY='1000': local rank 0 gets CPU 1000, which this process "
            "may not run on");
}

TEST(ThreadAffinity, PinsTheThread) {
  const int cpu = first_allowed_cpu();
  std::atomic<bool> go{false};
  std::atomic<int> ran_on{-1};
  std::thread thread([&] {
    while (!go) std::this_thread::yield();
    cpu_set_t mine;
    CPU_ZERO(&mine);
    sched_getaffinity(0, sizeof(mine), &mine);
    ran_on = CPU_COUNT(&mine) == 1 && CPU_ISSET(cpu, &mine) ? cpu : -2;
  });
  pin_thread(thread, cpu);
  go = true;
  thread.join();
  EXPECT_EQ(ran_on.load(), cpu);
}

}  // namespace
}  // namespace hvd
