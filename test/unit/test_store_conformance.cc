// What every Store does alike (MemoryStore, FileStore, TcpStore over a
// TcpStoreServer), run on each: round trips of binary values and odd keys,
// gets that wait for a later set from another client, timeouts naming the
// key, counters that refuse text and overflow, and exact concurrent adds
// from many clients. What only one store does is in its own file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "horovodcpp/errors.h"
#include "store/file_store.h"
#include "store/memory_store.h"
#include "store/tcp_store.h"
#include "store/tcp_store_server.h"

namespace hvd {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr const char* kSecret = "the conformance job's secret";

// One backing store per test; client() is another process's view of it.
class StoreConformance : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const std::string kind = GetParam();
    if (kind == "memory") {
      memory_ = std::make_shared<MemoryStore>();
    } else if (kind == "file") {
      std::string pattern =
          std::filesystem::temp_directory_path().string() + "/hvd_store_conformance_XXXXXX";
      ASSERT_NE(::mkdtemp(&pattern[0]), nullptr);
      directory_ = pattern;
    } else {
      server_ = std::make_unique<TcpStoreServer>("127.0.0.1", 0, kSecret);
    }
  }
  void TearDown() override {
    if (directory_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  std::shared_ptr<Store> client() {
    if (memory_) return memory_;
    if (!directory_.empty()) return std::make_shared<FileStore>(directory_ + "/store");
    return std::make_shared<TcpStore>("127.0.0.1", server_->port(), milliseconds(2000), kSecret);
  }

 private:
  std::shared_ptr<MemoryStore> memory_;
  std::string directory_;
  std::unique_ptr<TcpStoreServer> server_;
};

TEST_P(StoreConformance, RoundTripsBinaryEmptyAndOddKeys) {
  auto store = client();
  const std::string binary("a\0b\xff\n\0", 6);
  store->set("binary", binary);
  store->set("empty", "");
  store->set("", "empty key");
  store->set("rank/0/addr", "10.0.0.1:1234");
  store->set(std::string("nul\0key", 7), "nul");
  auto other = client();
  EXPECT_EQ(other->get("binary", milliseconds(100)), binary);
  EXPECT_EQ(other->get("empty", milliseconds(100)), "");
  EXPECT_EQ(other->get("", milliseconds(100)), "empty key");
  EXPECT_EQ(other->get("rank/0/addr", milliseconds(100)), "10.0.0.1:1234");
  EXPECT_EQ(other->get(std::string("nul\0key", 7), milliseconds(100)), "nul");
  store->set("binary", "overwritten");
  EXPECT_EQ(other->get("binary", milliseconds(100)), "overwritten");
}

TEST_P(StoreConformance, GetWaitsForALaterSetFromAnotherClient) {
  constexpr int kWaiters = 4;
  std::vector<std::string> got(kWaiters);
  std::vector<std::thread> waiters;
  const auto start = Clock::now();
  for (int t = 0; t < kWaiters; ++t) {
    waiters.emplace_back([&, t] { got[t] = client()->get("late/key", milliseconds(5000)); });
  }
  std::this_thread::sleep_for(milliseconds(100));
  auto writer = client();
  writer->set("other/key", "not this one");
  writer->set("late/key", "arrived");
  for (auto& waiter : waiters) waiter.join();
  const auto waited = Clock::now() - start;
  for (const std::string& value : got) EXPECT_EQ(value, "arrived");
  EXPECT_GE(waited, milliseconds(90));
  EXPECT_LT(waited, milliseconds(3000));
}

TEST_P(StoreConformance, GetTimesOutNamingTheKey) {
  auto store = client();
  store->set("present", "x");
  const auto start = Clock::now();
  try {
    store->get("missing/key", milliseconds(150));
    FAIL() << "get returned";
  } catch (const Timeout& e) {
    const auto waited = Clock::now() - start;
    EXPECT_GE(waited, milliseconds(150));
    EXPECT_LT(waited, milliseconds(5000));
    EXPECT_NE(std::string(e.what()).find("missing/key"), std::string::npos) << e.what();
  }
  // Still usable after a timeout.
  store->set("missing/key", "now");
  EXPECT_EQ(store->get("missing/key", milliseconds(100)), "now");
}

TEST_P(StoreConformance, AddCountsAndRefusesTextAndOverflow) {
  auto store = client();
  EXPECT_EQ(store->add("counter", 5), 5);
  EXPECT_EQ(store->add("counter", -7), -2);
  EXPECT_EQ(store->add("counter", 0), -2);
  EXPECT_EQ(store->get("counter", milliseconds(100)), "-2");
  store->set("text", "not a number");
  EXPECT_THROW(store->add("text", 1), InvalidArgument);
  EXPECT_EQ(store->get("text", milliseconds(100)), "not a number");
  store->set("big", std::to_string(LLONG_MAX));
  EXPECT_THROW(store->add("big", 1), InvalidArgument);
  EXPECT_EQ(store->get("big", milliseconds(100)), std::to_string(LLONG_MAX));
  EXPECT_EQ(store->add("counter", 2), 0);  // the errors broke nothing
}

TEST_P(StoreConformance, ConcurrentAddsFromManyClientsAreExact) {
  constexpr int kThreads = 8;
  constexpr int kAdds = 100;
  auto shared = client();         // half the threads share one client
  shared->set("unrelated", "x");  // the store exists before the race
  std::vector<std::vector<long long>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::shared_ptr<Store> store = t % 2 == 0 ? client() : shared;
      for (int i = 0; i < kAdds; ++i) seen[t].push_back(store->add("ranks/arrived", 1));
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(shared->add("ranks/arrived", 0), kThreads * kAdds);
  std::vector<long long> all;
  for (const auto& s : seen) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  for (int i = 0; i < kThreads * kAdds; ++i) ASSERT_EQ(all[i], i + 1);  // each value once
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreConformance, ::testing::Values("memory", "file", "tcp"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace hvd
