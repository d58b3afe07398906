// MemoryStore: an add wakes a waiting get (what every store does:
// test_store_conformance.cc).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "horovodcpp/errors.h"
#include "store/memory_store.h"

namespace hvd {
namespace {

using std::chrono::milliseconds;

TEST(MemoryStoreTest, AddWakesAWaitingGet) {
  MemoryStore store;
  std::string got;
  std::thread waiter([&] { got = store.get("arrived", milliseconds(10000)); });
  std::this_thread::sleep_for(milliseconds(50));
  store.add("arrived", 3);
  waiter.join();
  EXPECT_EQ(got, "3");
}

}  // namespace
}  // namespace hvd
