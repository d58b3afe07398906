#include "threads/rank_threads.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace hvd {
namespace threads {
namespace {

void run_rank(int rank, int size, const std::function<void(int)>& body) {
  SCOPED_TRACE(::testing::Message() << "rank " << rank << " of " << size);
  try {
    body(rank);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "rank " << rank << " of " << size << " threw: " << e.what();
  } catch (...) {
    ADD_FAILURE() << "rank " << rank << " of " << size << " threw something not an exception";
  }
}

[[noreturn]] void exit_hung(const std::vector<bool>& running, int size,
                            std::chrono::milliseconds limit) {
  std::string ranks;
  for (int r = 0; r < size; ++r) {
    if (running[r]) ranks += " " + std::to_string(r);
  }
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::fprintf(stderr,
               "run_ranks: rank(s)%s of %d still running after %lld ms in %s.%s (a wait without "
               "a bound?); exiting\n",
               ranks.c_str(), size, static_cast<long long>(limit.count()),
               test ? test->test_suite_name() : "?", test ? test->name() : "?");
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace

void run_ranks(int size, const std::function<void(int)>& body, std::chrono::milliseconds limit) {
  std::mutex mutex;
  std::condition_variable finished;
  std::vector<bool> running(size, false);
  int busy = 0;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    std::lock_guard<std::mutex> lock(mutex);
    try {
      threads.emplace_back([&, rank] {
        run_rank(rank, size, body);
        std::lock_guard<std::mutex> lock(mutex);
        running[rank] = false;
        --busy;
        finished.notify_all();
      });
    } catch (const std::system_error& e) {
      // The ranks already started fail against their own timeouts.
      ADD_FAILURE() << "cannot start the thread of rank " << rank << " of " << size << ": "
                    << e.what();
      break;
    }
    running[rank] = true;
    ++busy;
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    if (!finished.wait_for(lock, limit, [&] { return busy == 0; })) {
      exit_hung(running, size, limit);
    }
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace threads
}  // namespace hvd
