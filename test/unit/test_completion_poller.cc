// CompletionPoller with fake events: callbacks fire once the event is done,
// on the poller's thread; health-check errors and shutdown fail what is
// pending. complete_on_stream: Works complete at once, a caller's wait()
// makes its stream wait for the event, they finish (and the timeline event
// ends) when the poller sees it done.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "../harness/timeline_file.h"
#include "core/device/completion_poller.h"
#include "core/device/device_completion.h"
#include "horovodcpp/errors.h"
#include "horovodcpp/work.h"

namespace hvd {
namespace {

// Events are integers; the test marks them done.
class FakeEvents : public GpuEvents {
 public:
  Event record(int, void* stream) override {
    std::lock_guard<std::mutex> lock(mutex_);
    recorded_on_[next_] = stream;
    return reinterpret_cast<Event>(next_++);
  }
  bool done(Event event) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_.count(id(event)) > 0;
  }
  void stream_wait(int, void* stream, Event event) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fail_waits) throw BackendError("cudaStreamWaitEvent failed");
    waits_.insert({stream, id(event)});
    ++wait_calls;
  }
  void release(Event event) override {
    std::lock_guard<std::mutex> lock(mutex_);
    released_.insert(id(event));
  }
  void complete(Event event) {
    std::lock_guard<std::mutex> lock(mutex_);
    completed_.insert(id(event));
  }
  std::size_t released() {
    std::lock_guard<std::mutex> lock(mutex_);
    return released_.size();
  }
  bool waits(void* stream, Event event) {
    std::lock_guard<std::mutex> lock(mutex_);
    return waits_.count({stream, id(event)}) > 0;
  }
  bool fail_waits = false;
  int wait_calls = 0;

 private:
  static std::intptr_t id(Event e) { return reinterpret_cast<std::intptr_t>(e); }
  std::mutex mutex_;
  std::intptr_t next_ = 1;
  std::map<std::intptr_t, void*> recorded_on_;
  std::set<std::intptr_t> completed_, released_;
  std::set<std::pair<void*, std::intptr_t>> waits_;
};

template <typename Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 2000 && !pred(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return pred();
}

// Fake events shared as the device operations share theirs.
struct Events {
  std::shared_ptr<FakeEvents> fake = std::make_shared<FakeEvents>();
  std::shared_ptr<void> record() { return record_shared(fake, 0, nullptr); }
};

TEST(CompletionPoller, CallsBackOnlyAfterTheEventCompletes) {
  Events events;
  CompletionPoller poller(*events.fake);
  std::atomic<int> calls{0};
  std::thread::id caller;
  auto e1 = events.record(), e2 = events.record();
  poller.watch(e1, [&](std::exception_ptr error) {
    EXPECT_FALSE(error);
    caller = std::this_thread::get_id();
    ++calls;
  });
  poller.watch(e2, [&](std::exception_ptr error) {
    EXPECT_FALSE(error);
    calls += 10;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(calls, 0);
  events.fake->complete(e2.get());  // out of order: a second stream may finish first
  EXPECT_TRUE(eventually([&] { return calls == 10; }));
  events.fake->complete(e1.get());
  EXPECT_TRUE(eventually([&] { return calls == 11; }));
  EXPECT_NE(caller, std::this_thread::get_id());
  e1.reset();
  e2.reset();
  EXPECT_TRUE(eventually([&] { return poller.pending() == 0 && events.fake->released() == 2; }));
}

TEST(CompletionPoller, HealthCheckErrorFailsEveryPendingEvent) {
  Events events;
  std::atomic<bool> broken{false};
  CompletionPoller poller(*events.fake, [&](std::chrono::steady_clock::duration) {
    if (broken) throw BackendError("NCCL reported an asynchronous error: remote process exited");
  });
  std::atomic<int> failures{0};
  for (int i = 0; i < 3; ++i) {
    poller.watch(events.record(), [&](std::exception_ptr error) {
      ASSERT_TRUE(error);
      try {
        std::rethrow_exception(error);
      } catch (const BackendError& e) {
        EXPECT_NE(std::string(e.what()).find("remote process exited"), std::string::npos);
        ++failures;
      }
    });
  }
  broken = true;
  EXPECT_TRUE(eventually([&] { return failures == 3; }));
  EXPECT_TRUE(eventually([&] { return events.fake->released() == 3u; }));
}

TEST(CompletionPoller, HealthCheckSeesHowLongTheOldestWaited) {
  Events events;
  std::atomic<bool> timed_out{false};
  CompletionPoller poller(*events.fake, [&](std::chrono::steady_clock::duration oldest) {
    if (oldest > std::chrono::milliseconds(30)) throw Timeout("waited too long");
  });
  poller.watch(events.record(), [&](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const Timeout&) {
      timed_out = true;
    }
  });
  EXPECT_TRUE(eventually([&] { return timed_out.load(); }));
}

TEST(CompletionPoller, ShutdownFailsWhatIsPending) {
  Events events;
  std::exception_ptr seen;
  {
    CompletionPoller poller(*events.fake);
    poller.watch(events.record(), [&](std::exception_ptr error) { seen = error; });
  }
  ASSERT_TRUE(seen);
  EXPECT_THROW(std::rethrow_exception(seen), RankFailure);
  EXPECT_EQ(events.fake->released(), 1u);
}

TEST(CompletionPoller, CallbackMayWatchAnotherEvent) {
  Events events;
  CompletionPoller poller(*events.fake);
  auto first = events.record(), second = events.record();
  std::atomic<bool> second_done{false};
  poller.watch(first, [&](std::exception_ptr) {
    poller.watch(second, [&](std::exception_ptr) { second_done = true; });
  });
  events.fake->complete(first.get());
  events.fake->complete(second.get());
  EXPECT_TRUE(eventually([&] { return second_done.load(); }));
}

// complete_on_stream for the tensors of two callers, each on a stream of
// its own; the collective ran on `queue`.
class DeviceCompletionTest : public ::testing::Test {
 protected:
  DeviceCompletionTest() {
    entries[0].input.stream = &stream_a;
    entries[1].input.stream = &stream_b;
    for (TensorEntry& e : entries) e.work = std::make_shared<detail::WorkState>();
  }
  Events events;
  CompletionPoller poller{*events.fake};
  int stream_a = 0, stream_b = 0, queue = 0;
  std::vector<TensorEntry> entries = std::vector<TensorEntry>(2);
  const GpuEvents::Event done = reinterpret_cast<GpuEvents::Event>(1);  // the first recorded
};

// The Works complete at once with the result, recorded on the collective's
// stream; each caller's wait() makes its stream wait for that event (the
// host does not wait); they finish once the event is done, and the event
// is released once nothing needs it.
TEST_F(DeviceCompletionTest, WorksCompleteAtOnceAndWaitOrdersTheCallersStream) {
  Tensor result(DataType::kFloat32, {3});
  complete_on_stream(events.fake, poller, 0, &queue, {&entries[0], &entries[1]}, {}, result,
                     {1, 2});
  EXPECT_TRUE(entries[0].work->done());
  EXPECT_FALSE(events.fake->waits(&stream_a, done));
  ASSERT_TRUE(entries[0].work->wait(std::chrono::seconds(0)));
  EXPECT_TRUE(events.fake->waits(&stream_a, done));
  EXPECT_FALSE(events.fake->waits(&stream_b, done));  // not waited for yet
  EXPECT_EQ(entries[0].work->output().data(), result.data());
  EXPECT_EQ(entries[1].work->received_splits(), (std::vector<std::int64_t>{1, 2}));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(entries[0].work->finished());
  events.fake->complete(done);
  ASSERT_TRUE(eventually([&] { return entries[1].work->finished(); }));
  // Finished: a later wait() has nothing to order after.
  ASSERT_TRUE(entries[1].work->wait(std::chrono::seconds(0)));
  EXPECT_FALSE(events.fake->waits(&stream_b, done));
  EXPECT_TRUE(eventually([&] { return events.fake->released() == 1; }));
}

// A joined rank's zeros have no caller: no stream waits for them, and the
// submitted tensors of the group complete as usual.
TEST_F(DeviceCompletionTest, JoinedZerosAddNoStreamWait) {
  entries[1].joined = true;
  complete_on_stream(events.fake, poller, 0, &queue, {&entries[0], &entries[1]}, {});
  for (TensorEntry& e : entries) ASSERT_TRUE(e.work->wait(std::chrono::seconds(0)));
  EXPECT_TRUE(events.fake->waits(&stream_a, done));
  EXPECT_FALSE(events.fake->waits(&stream_b, done));
  events.fake->complete(done);
  EXPECT_TRUE(eventually([&] { return entries[0].work->finished(); }));
}

// The poller holds the Works weakly: a Work the caller dropped (with its
// result, device memory in real use) is never freed on the poller's thread.
TEST_F(DeviceCompletionTest, ThePollerDoesNotKeepDroppedWorks) {
  auto memory = std::make_shared<float>(0.0f);
  const std::weak_ptr<void> storage = memory;
  Tensor result(DataType::kFloat32, {1}, Device::cuda(0), memory.get(), memory);
  memory.reset();
  complete_on_stream(events.fake, poller, 0, &queue, {&entries[0]}, {}, result);
  result = Tensor();
  entries[0].work.reset();
  EXPECT_TRUE(storage.expired());
  events.fake->complete(done);
  EXPECT_TRUE(eventually([&] { return poller.pending() == 0; }));
}

// An error the GPU reports after wait() returned reaches the Work: its next
// wait() rethrows it (here: the poller's health check fails the event).
TEST(DeviceCompletion, AnErrorAfterCompletionFailsTheWork) {
  auto fake = std::make_shared<FakeEvents>();
  std::atomic<bool> broken{false};
  CompletionPoller poller(*fake, [&](std::chrono::steady_clock::duration) {
    if (broken) throw BackendError("NCCL reported an asynchronous error");
  });
  TensorEntry entry;
  entry.work = std::make_shared<detail::WorkState>();
  complete_on_stream(fake, poller, 0, nullptr, {&entry}, {});
  ASSERT_TRUE(entry.work->wait(std::chrono::seconds(0)));
  EXPECT_FALSE(entry.work->error());
  broken = true;
  ASSERT_TRUE(eventually([&] { return entry.work->finished(); }));
  EXPECT_TRUE(entry.work->error());
}

// One event per tensor on the timeline, from the span's start to when the
// poller saw the completion event done, queued before the Works finish.
TEST_F(DeviceCompletionTest, TimelineEventEndsWhenThePollerSeesTheEventDone) {
  const std::string path = test::timeline_path("device_completion");
  Timeline timeline(1 << 20);
  timeline.start(path, false);
  entries[0].request.name = "a";
  entries[1].request.name = "b";
  const std::vector<const TensorEntry*> group{&entries[0], &entries[1]};
  const long long queued = test::timeline_micros();
  complete_on_stream(events.fake, poller, 0, &queue, group,
                     TimelineSpan(&timeline, "NCCL_ALLREDUCE", group));
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the end differs from the start
  const long long completed = test::timeline_micros();
  events.fake->complete(done);
  for (TensorEntry& e : entries) ASSERT_TRUE(eventually([&] { return e.work->finished(); }));
  timeline.stop();
  test::expect_spans(test::traced_events(path, "NCCL_ALLREDUCE"), {"a", "b"}, queued, completed);
  std::remove(path.c_str());
}

// A collective that failed (here: shut down before the GPU ran it) leaves
// no event on the timeline, and its Work the error.
TEST(DeviceCompletion, FailedCollectiveLeavesNoTimelineEvent) {
  const std::string path = test::timeline_path("device_failure");
  Timeline timeline(1 << 20);
  timeline.start(path, false);
  auto fake = std::make_shared<FakeEvents>();
  TensorEntry entry;
  entry.request.name = "a";
  entry.work = std::make_shared<detail::WorkState>();
  {
    CompletionPoller poller(*fake);
    complete_on_stream(fake, poller, 0, nullptr, {&entry},
                       TimelineSpan(&timeline, "NCCL_BROADCAST", entry));
  }
  ASSERT_TRUE(entry.work->finished());
  EXPECT_TRUE(entry.work->error());
  timeline.stop();
  EXPECT_TRUE(test::traced_events(path, "NCCL_BROADCAST").empty());
  std::remove(path.c_str());
}

// The tensors of one stream (a fused group's gradients): the first wait()
// makes the stream wait for the event, the others add no CUDA call; a wait
// that failed is tried again by the next tensor's.
TEST(DeviceCompletion, OneStreamWaitPerCallersStream) {
  auto fake = std::make_shared<FakeEvents>();
  CompletionPoller poller(*fake);
  int stream_a = 0, stream_b = 0;
  std::vector<TensorEntry> entries(4);
  for (TensorEntry& e : entries) {
    e.input.stream = &stream_a;
    e.work = std::make_shared<detail::WorkState>();
  }
  entries[3].input.stream = &stream_b;
  complete_on_stream(fake, poller, 0, nullptr, {&entries[0], &entries[1], &entries[2], &entries[3]},
                     {});
  fake->fail_waits = true;
  EXPECT_THROW(Work(entries[0].work).wait(), BackendError);
  fake->fail_waits = false;
  EXPECT_EQ(fake->wait_calls, 0);
  Work(entries[1].work).wait();
  Work(entries[2].work).wait();
  EXPECT_EQ(fake->wait_calls, 1);
  Work(entries[3].work).wait();
  EXPECT_EQ(fake->wait_calls, 2);
  const GpuEvents::Event done = reinterpret_cast<GpuEvents::Event>(1);
  EXPECT_TRUE(fake->waits(&stream_a, done));
  EXPECT_TRUE(fake->waits(&stream_b, done));
}

// A caller's stream that cannot be made to wait: wait() throws, the
// operation is not reported as a success.
TEST(DeviceCompletion, AFailedStreamWaitIsWaitsError) {
  auto fake = std::make_shared<FakeEvents>();
  CompletionPoller poller(*fake);
  fake->fail_waits = true;
  TensorEntry entry;
  entry.work = std::make_shared<detail::WorkState>();
  complete_on_stream(fake, poller, 0, nullptr, {&entry}, {});
  Work work(entry.work);
  EXPECT_THROW(work.wait(), BackendError);
}

}  // namespace
}  // namespace hvd
