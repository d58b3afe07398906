// MemoryStore: round trips, gets that wait for a later set (several waiters
// at once), timeouts naming the key, and exact concurrent counters.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <string>
#include <thread>
#include <vector>

#include "horovodcpp/errors.h"
#include "store/memory_store.h"

namespace hvd {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

TEST(MemoryStoreTest, RoundTripsBinaryEmptyAndOverwrites) {
  MemoryStore store;
  const std::string binary("a\0b\xff\n\0", 6);
  store.set("binary", binary);
  store.set("empty", "");
  store.set("", "empty key");
  EXPECT_EQ(store.get("binary", milliseconds(0)), binary);
  EXPECT_EQ(store.get("empty", milliseconds(0)), "");
  EXPECT_EQ(store.get("", milliseconds(0)), "empty key");
  store.set("binary", "overwritten");
  EXPECT_EQ(store.get("binary", milliseconds(0)), "overwritten");
}

TEST(MemoryStoreTest, GetWaitsForALaterSet) {
  MemoryStore store;
  constexpr int kWaiters = 4;
  std::vector<std::string> got(kWaiters);
  std::vector<std::thread> waiters;
  for (int t = 0; t < kWaiters; ++t) {
    waiters.emplace_back([&, t] { got[t] = store.get("late/key", milliseconds(10000)); });
  }
  std::this_thread::sleep_for(milliseconds(50));
  store.set("other/key", "not this one");
  store.set("late/key", "arrived");
  for (auto& waiter : waiters) waiter.join();
  for (const std::string& value : got) EXPECT_EQ(value, "arrived");
}

TEST(MemoryStoreTest, GetTimesOutNamingTheKey) {
  MemoryStore store;
  store.set("present", "x");
  const auto start = Clock::now();
  try {
    store.get("missing/key", milliseconds(150));
    FAIL() << "get returned";
  } catch (const Timeout& e) {
    const auto waited = Clock::now() - start;
    EXPECT_GE(waited, milliseconds(150));
    EXPECT_LT(waited, milliseconds(5000));
    EXPECT_NE(std::string(e.what()).find("'missing/key'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(store.get("missing/key", milliseconds(0)), Timeout);
}

TEST(MemoryStoreTest, AddCountsAndReads) {
  MemoryStore store;
  EXPECT_EQ(store.add("counter", 5), 5);
  EXPECT_EQ(store.add("counter", -7), -2);
  EXPECT_EQ(store.add("counter", 0), -2);
  EXPECT_EQ(store.get("counter", milliseconds(0)), "-2");
  store.set("text", "not a number");
  EXPECT_THROW(store.add("text", 1), InvalidArgument);
  EXPECT_EQ(store.get("text", milliseconds(0)), "not a number");
  store.set("big", std::to_string(LLONG_MAX));
  EXPECT_THROW(store.add("big", 1), InvalidArgument);
  EXPECT_EQ(store.get("big", milliseconds(0)), std::to_string(LLONG_MAX));
}

TEST(MemoryStoreTest, AddWakesAWaitingGet) {
  MemoryStore store;
  std::string got;
  std::thread waiter([&] { got = store.get("arrived", milliseconds(10000)); });
  std::this_thread::sleep_for(milliseconds(50));
  store.add("arrived", 3);
  waiter.join();
  EXPECT_EQ(got, "3");
}

TEST(MemoryStoreTest, ConcurrentAddsAreExact) {
  constexpr int kThreads = 8;
  constexpr int kAdds = 1000;
  MemoryStore store;
  std::vector<std::vector<long long>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAdds; ++i) seen[t].push_back(store.add("ranks/arrived", 1));
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(store.add("ranks/arrived", 0), kThreads * kAdds);
  std::vector<long long> all;
  for (const auto& s : seen) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  for (int i = 0; i < kThreads * kAdds; ++i) ASSERT_EQ(all[i], i + 1);  // each value once
}

}  // namespace
}  // namespace hvd
