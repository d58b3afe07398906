// The threads-as-ranks harness itself: every rank runs concurrently, a
// failure or exception on one thread fails the test naming its rank, a
// rank that never returns ends the process naming it, ranks that are
// threads meet through a MemoryStore under the Gloo prefix they share, and
// a rank that throws out of a job makes the others fail in moments (not at
// the timeout).
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/gloo/gloo_backend.h"
#include "backend/gloo/gloo_context.h"
#include "horovodcpp/errors.h"
#include "store/memory_store.h"
#include "threads/rank_threads.h"
#include "threads/thread_job.h"

namespace hvd {
namespace threads {
namespace {

using Clock = std::chrono::steady_clock;

// The failures `fn` reports, from any thread, instead of failing this test.
template <typename Fn>
std::vector<std::string> failures_of(Fn&& fn) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS, &results);
    fn();
  }
  std::vector<std::string> messages;
  for (int i = 0; i < results.size(); ++i)
    messages.push_back(results.GetTestPartResult(i).message());
  return messages;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(RunRanksTest, EveryRankRunsOnceAndConcurrently) {
  constexpr int kSize = 4;
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<int> runs(kSize, 0);
  int present = 0;
  run_ranks(kSize, [&](int rank) {
    std::unique_lock<std::mutex> lock(mutex);
    ++runs[rank];
    ++present;
    arrived.notify_all();
    // A barrier: only passable when every rank is running at once.
    EXPECT_TRUE(arrived.wait_for(lock, std::chrono::seconds(30), [&] { return present == kSize; }));
  });
  EXPECT_EQ(runs, std::vector<int>(kSize, 1));
}

TEST(RunRanksTest, FailuresAndExceptionsNameTheirRank) {
  const std::vector<std::string> failures = failures_of([] {
    run_ranks(3, [](int rank) {
      if (rank == 1) ADD_FAILURE() << "wrong value";
      if (rank == 2) throw InvalidArgument("boom");
    });
  });
  ASSERT_EQ(failures.size(), 2u);
  for (const std::string& failure : failures) {
    if (contains(failure, "wrong value")) {
      EXPECT_TRUE(contains(failure, "rank 1 of 3")) << failure;
    } else {
      EXPECT_TRUE(contains(failure, "rank 2 of 3 threw: boom")) << failure;
    }
  }
}

TEST(RunRanksDeathTest, HungRankEndsTheProcessNamingIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_ranks(
                  3,
                  [](int rank) {
                    if (rank == 1) std::this_thread::sleep_for(std::chrono::minutes(10));
                  },
                  std::chrono::milliseconds(300)),
              ::testing::ExitedWithCode(1), "rank\\(s\\) 1 of 3 still running after 300 ms");
}

// ---- What ThreadJob needs from GlooContext: ranks that are threads of one
// process meet only under a prefix they name together (each would take its
// own GlooStoreAdapter::next_init_prefix() otherwise).

GlooOptions thread_rank_options(int rank, std::shared_ptr<Store> store, const std::string& prefix,
                                std::chrono::milliseconds timeout) {
  GlooOptions options;
  options.topology.rank = options.topology.local_rank = rank;
  options.topology.size = options.topology.local_size = 2;
  options.store = std::move(store);
  options.network.hostname = "127.0.0.1";
  options.timeout = timeout;
  options.prefix = prefix;
  return options;
}

TEST(GlooContextPrefixTest, ThreadsMeetUnderTheirPrefix) {
  auto store = std::make_shared<MemoryStore>();
  run_ranks(2, [&](int rank) {
    auto context =
        GlooContext::create(thread_rank_options(rank, store, "shared/", ThreadJob::kTimeout));
    GlooBackend backend(context);
    std::int32_t value = rank + 1;
    backend.allreduce(&value, 1, DataType::kInt32, ReduceOp::kSum);
    EXPECT_EQ(value, 3);
    EXPECT_EQ(context->prefix(), "shared/");
  });
}

TEST(GlooContextPrefixTest, ThreadsWithoutOneDoNotMeet) {
  auto store = std::make_shared<MemoryStore>();
  run_ranks(2, [&](int rank) {
    EXPECT_THROW(
        GlooContext::create(thread_rank_options(rank, store, "", std::chrono::milliseconds(500))),
        BackendError);
  });
}

// Rank 2 throws instead of joining an allreduce: ranks 0 and 1 must fail
// long before their timeout, and the job is unusable afterwards.
class ThreadJobTest : public ::testing::TestWithParam<JobBackend> {};

TEST_P(ThreadJobTest, RankThatThrowsLeavesAndOthersFailFast) {
  ThreadJob job(GetParam(), 3);
  ASSERT_TRUE(job.usable());
  const auto start = Clock::now();
  const std::vector<std::string> failures = failures_of([&job] {
    job.run([](ThreadRank& r) {
      if (r.topology.rank == 2) throw std::runtime_error("boom");
      std::vector<float> data(100000, 1.0f);
      r.backend->allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
    });
  });
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(seconds, ThreadJob::kTimeout.count() / 2.0) << "the others waited for their timeout";
  ASSERT_EQ(failures.size(), 3u);
  for (int rank = 0; rank < 3; ++rank) {
    const std::string name = "rank " + std::to_string(rank) + " of 3 threw: ";
    int named = 0;
    for (const std::string& failure : failures) named += contains(failure, name);
    EXPECT_EQ(named, 1) << name;
  }
  EXPECT_FALSE(job.usable());
  const std::vector<std::string> later = failures_of([&job] { job.run([](ThreadRank&) {}); });
  ASSERT_EQ(later.size(), 1u);
  EXPECT_TRUE(contains(later[0], "lost a rank")) << later[0];
}

INSTANTIATE_TEST_SUITE_P(Backends, ThreadJobTest,
                         ::testing::Values(JobBackend::kGloo, JobBackend::kShm),
                         [](const ::testing::TestParamInfo<JobBackend>& info) {
                           return std::string(job_backend_name(info.param));
                         });

}  // namespace
}  // namespace threads
}  // namespace hvd
