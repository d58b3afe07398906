// CompletionPoller with fake events: callbacks fire once the event is done,
// on the poller's thread; health-check errors and shutdown fail what is
// pending. complete_when_done: streams, Works and the timeline event that
// ends when the poller sees the collective done.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "../timeline_file.h"
#include "core/device/completion_poller.h"
#include "core/device/device_completion.h"
#include "horovodcpp/errors.h"

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
  for (int i = 0; i < 2000 && !pred(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return pred();
}

TEST(CompletionPoller, CallsBackOnlyAfterTheEventCompletes) {
  FakeEvents events;
  CompletionPoller poller(events);
  std::atomic<int> calls{0};
  std::thread::id caller;
  auto e1 = events.record(0, nullptr), e2 = events.record(0, nullptr);
  poller.watch(e1, [&](std::exception_ptr error) {
    EXPECT_FALSE(error);
    caller = std::this_thread::get_id();
    ++calls;
  });
  poller.watch(e2, [&](std::exception_ptr error) { EXPECT_FALSE(error); calls += 10; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(calls, 0);
  events.complete(e2);  // out of order: a second stream may finish first
  EXPECT_TRUE(eventually([&] { return calls == 10; }));
  events.complete(e1);
  EXPECT_TRUE(eventually([&] { return calls == 11; }));
  EXPECT_NE(caller, std::this_thread::get_id());
  EXPECT_TRUE(eventually([&] { return poller.pending() == 0 && events.released() == 2; }));
}

TEST(CompletionPoller, HealthCheckErrorFailsEveryPendingEvent) {
  FakeEvents events;
  std::atomic<bool> broken{false};
  CompletionPoller poller(events, [&](std::chrono::steady_clock::duration) {
    if (broken) throw BackendError("NCCL reported an asynchronous error: remote process exited");
  });
  std::atomic<int> failures{0};
  for (int i = 0; i < 3; ++i) {
    poller.watch(events.record(0, nullptr), [&](std::exception_ptr error) {
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
  EXPECT_EQ(events.released(), 3u);
}

TEST(CompletionPoller, HealthCheckSeesHowLongTheOldestWaited) {
  FakeEvents events;
  std::atomic<bool> timed_out{false};
  CompletionPoller poller(events, [&](std::chrono::steady_clock::duration oldest) {
    if (oldest > std::chrono::milliseconds(30)) throw Timeout("waited too long");
  });
  poller.watch(events.record(0, nullptr), [&](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const Timeout&) {
      timed_out = true;
    }
  });
  EXPECT_TRUE(eventually([&] { return timed_out.load(); }));
}

TEST(CompletionPoller, ShutdownFailsWhatIsPending) {
  FakeEvents events;
  std::exception_ptr seen;
  {
    CompletionPoller poller(events);
    poller.watch(events.record(0, nullptr), [&](std::exception_ptr error) { seen = error; });
  }
  ASSERT_TRUE(seen);
  EXPECT_THROW(std::rethrow_exception(seen), RankFailure);
  EXPECT_EQ(events.released(), 1u);
}

TEST(CompletionPoller, CallbackMayWatchAnotherEvent) {
  FakeEvents events;
  CompletionPoller poller(events);
  auto first = events.record(0, nullptr), second = events.record(0, nullptr);
  std::atomic<bool> second_done{false};
  poller.watch(first, [&](std::exception_ptr) {
    poller.watch(second, [&](std::exception_ptr) { second_done = true; });
  });
  events.complete(first);
  events.complete(second);
  EXPECT_TRUE(eventually([&] { return second_done.load(); }));
}

// complete_when_done for the tensors of two callers, each on a stream of
// its own; the collective ran on `queue`.
class DeviceCompletionTest : public ::testing::Test {
 protected:
  DeviceCompletionTest() {
    entries[0].input.stream = &stream_a;
    entries[1].input.stream = &stream_b;
    for (TensorEntry& e : entries) e.work = std::make_shared<detail::WorkState>();
  }
  FakeEvents events;
  CompletionPoller poller{events};
  int stream_a = 0, stream_b = 0, queue = 0;
  std::vector<TensorEntry> entries = std::vector<TensorEntry>(2);
  const GpuEvents::Event done = reinterpret_cast<GpuEvents::Event>(1);  // the first recorded
};

// Every caller's stream waits for the one completion event; the Works
// complete with the result once it is done.
TEST_F(DeviceCompletionTest, CallersStreamsWaitAndWorksCompleteWithTheResult) {
  Tensor result(DataType::kFloat32, {3});
  complete_when_done(events, poller, 0, &queue, {&entries[0], &entries[1]}, {}, result, {1, 2});
  EXPECT_TRUE(events.waits(&stream_a, done));
  EXPECT_TRUE(events.waits(&stream_b, done));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(entries[0].work->done());
  events.complete(done);
  ASSERT_TRUE(eventually([&] { return entries[1].work->done(); }));
  EXPECT_EQ(entries[0].work->output().data(), result.data());
  EXPECT_EQ(entries[1].work->received_splits(), (std::vector<std::int64_t>{1, 2}));
  EXPECT_TRUE(eventually([&] { return events.released() == 1; }));
}

// A joined rank's zeros have no caller: no stream waits for them, and the
// submitted tensors of the group complete as usual.
TEST_F(DeviceCompletionTest, JoinedZerosAddNoStreamWait) {
  entries[1].joined = true;
  complete_when_done(events, poller, 0, &queue, {&entries[0], &entries[1]}, {});
  EXPECT_TRUE(events.waits(&stream_a, done));
  EXPECT_FALSE(events.waits(&stream_b, done));
  events.complete(done);
  EXPECT_TRUE(eventually([&] { return entries[0].work->done(); }));
}

// One event per tensor on the timeline, from the span's start to when the
// poller saw the completion event done, queued before the Works complete.
TEST_F(DeviceCompletionTest, TimelineEventEndsWhenThePollerSeesTheEventDone) {
  const std::string path = test::timeline_path("device_completion");
  Timeline timeline(1 << 20);
  timeline.start(path, false);
  entries[0].request.name = "a";
  entries[1].request.name = "b";
  const std::vector<const TensorEntry*> group{&entries[0], &entries[1]};
  const long long queued = test::timeline_micros();
  complete_when_done(events, poller, 0, &queue, group,
                     TimelineSpan(&timeline, "NCCL_ALLREDUCE", group));
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the end differs from the start
  const long long completed = test::timeline_micros();
  events.complete(done);
  for (TensorEntry& e : entries) ASSERT_TRUE(e.work->wait(std::chrono::seconds(10)));
  timeline.stop();
  test::expect_spans(test::traced_events(path, "NCCL_ALLREDUCE"), {"a", "b"}, queued, completed);
  std::remove(path.c_str());
}

// A collective that failed (here: shut down before it completed) leaves no
// event on the timeline.
TEST(DeviceCompletion, FailedCollectiveLeavesNoTimelineEvent) {
  const std::string path = test::timeline_path("device_failure");
  Timeline timeline(1 << 20);
  timeline.start(path, false);
  FakeEvents events;
  TensorEntry entry;
  entry.request.name = "a";
  entry.work = std::make_shared<detail::WorkState>();
  {
    CompletionPoller poller(events);
    complete_when_done(events, poller, 0, nullptr, {&entry},
                       TimelineSpan(&timeline, "NCCL_BROADCAST", entry));
  }
  ASSERT_TRUE(entry.work->done());
  EXPECT_TRUE(entry.work->error());
  timeline.stop();
  EXPECT_TRUE(test::traced_events(path, "NCCL_BROADCAST").empty());
  std::remove(path.c_str());
}

TEST(DeviceCompletion, FailedStreamWaitReleasesTheEventAndThrows) {
  FakeEvents events;
  CompletionPoller poller(events);
  events.fail_waits = true;
  TensorEntry entry;
  entry.work = std::make_shared<detail::WorkState>();
  EXPECT_THROW(complete_when_done(events, poller, 0, nullptr, {&entry}, {}), BackendError);
  EXPECT_EQ(events.released(), 1u);
  EXPECT_EQ(poller.pending(), 0u);
}

}  // namespace
}  // namespace hvd
