// The timeline's pieces: the Chrome-trace file writer (valid JSON, rows
// named after tensors, byte budget), the bounded event queue (drops and
// counts, never blocks), the Timeline's start/stop and events from several
// threads, a writer killed mid-run (the file is still complete JSON), and
// TimelineSpan (one event per tensor, ended on any thread).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "../harness/timeline_file.h"
#include "core/diagnostics/timeline.h"
#include "core/execution/timeline_span.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

using test::json_without_last_event;
using test::read_file;
using test::valid_json;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TimelineEvent complete(const std::string& row, const std::string& name, long long ts) {
  TimelineEvent event;
  event.kind = TimelineEvent::Kind::kComplete;
  event.row = row;
  event.name = name;
  event.ts_us = ts;
  event.dur_us = 5;
  return event;
}

TEST(TimelineFileWriter, WritesValidChromeTraceWithNamedRows) {
  const std::string path = test::timeline_path("writer");
  {
    TimelineFileWriter writer(path, 1 << 20);
    writer.write(complete("fc1.grad", "NEGOTIATE", 100));
    TimelineEvent ready;
    ready.row = "fc1.grad";
    ready.name = "rank 1 ready";
    ready.ts_us = 102;
    writer.write(ready);
    writer.write(complete("fc1.grad", "MPI_ALLREDUCE", 110));
    writer.write(complete("odd \"name\"\\x", "QUEUE", 90));  // escaped
    writer.finish(0);
  }
  const std::string text = read_file(path);
  EXPECT_TRUE(valid_json(path)) << text;
  EXPECT_EQ(text.rfind("{\"traceEvents\":[", 0), 0u) << text;
  EXPECT_NE(text.find("\"name\":\"NEGOTIATE\""), std::string::npos);
  EXPECT_NE(text.find("\"name\":\"rank 1 ready\""), std::string::npos);
  EXPECT_NE(text.find("\"name\":\"MPI_ALLREDUCE\""), std::string::npos);
  // One thread_name row per tensor, written once.
  EXPECT_EQ(count(text, "\"thread_name\""), 2u);
  EXPECT_NE(text.find("\"args\":{\"name\":\"fc1.grad\"}"), std::string::npos);
  EXPECT_NE(text.find("odd \\\"name\\\"\\\\x"), std::string::npos);
  EXPECT_EQ(text.find("dropped"), std::string::npos);
  std::remove(path.c_str());
}

TEST(TimelineFileWriter, StopsAtTheByteBudgetAndSaysSo) {
  const std::string path = test::timeline_path("budget");
  const long long budget = 4096;
  {
    TimelineFileWriter writer(path, budget);
    for (int i = 0; i < 1000; ++i) writer.write(complete("t" + std::to_string(i % 7), "QUEUE", i));
    EXPECT_GT(writer.truncated(), 0);
    writer.finish(3);
  }
  const std::string text = read_file(path);
  EXPECT_LE(static_cast<long long>(text.size()), budget);
  EXPECT_TRUE(valid_json(path)) << text;
  EXPECT_NE(text.find("HOROVODCPP_TIMELINE_MAX_BYTES"), std::string::npos);
  EXPECT_NE(text.find("dropped 3 events"), std::string::npos);
  std::remove(path.c_str());
}

TEST(TimelineFileWriter, UnopenableFileIsInvalidArgument) {
  EXPECT_THROW(TimelineFileWriter("/nonexistent-dir/x/t.json", 1 << 20), InvalidArgument);
}

// A rank killed while its timeline is being written (a failed job, a time
// limit): the file must open as it is, at whatever moment the kill landed.
TEST(Timeline, FileIsCompleteJsonWhenTheWriterIsKilled) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    const std::string path = test::timeline_path("killed" + std::to_string(attempt));
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Timeline timeline(1 << 24, 1 << 16, std::chrono::milliseconds(5));
      timeline.start(path, false);
      for (long i = 0;; ++i) {
        const auto now = TimelineClock::now();
        timeline.complete("grad." + std::to_string(i % 50), "ALLREDUCE", now, now);
        if (i % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + 37 * attempt));
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    const std::string text = read_file(path);
    // Complete JSON, unless the kill landed inside a write: then only its
    // last event may be cut short.
    EXPECT_TRUE(valid_json(path) || json_without_last_event(path))
        << "killed after " << 100 + 37 * attempt
        << " ms; ends with: " << text.substr(text.size() > 200 ? text.size() - 200 : 0);
    EXPECT_FALSE(test::traced_events(path, "ALLREDUCE").empty());
    std::remove(path.c_str());
  }
}

TEST(TimelineEventQueue, DropsAndCountsWhenFullWithoutBlocking) {
  TimelineEventQueue queue(4);
  EXPECT_FALSE(queue.push(complete("a", "QUEUE", 1)));  // closed: refused, not counted
  EXPECT_EQ(queue.dropped(), 0);
  queue.open();
  for (int i = 0; i < 10; ++i) queue.push(complete("a", "QUEUE", i));
  EXPECT_EQ(queue.dropped(), 6);
  EXPECT_EQ(queue.pop_all(std::chrono::milliseconds(0)).size(), 4u);
  EXPECT_TRUE(queue.push(complete("a", "QUEUE", 11)));
  queue.close();
  EXPECT_TRUE(queue.closed());
  EXPECT_EQ(queue.pop_all(std::chrono::milliseconds(0)).size(), 1u);
}

TEST(Timeline, StartStopWritesEventsAndNegotiation) {
  const std::string path = test::timeline_path("timeline");
  Timeline timeline(1 << 20);
  EXPECT_FALSE(timeline.active());
  timeline.instant("x", "before start");  // ignored
  timeline.start(path, /*mark_cycles=*/true);
  EXPECT_TRUE(timeline.active());
  const auto t = TimelineClock::now();
  timeline.negotiate_arrival("grad.0", 1, t);
  timeline.negotiate_arrival("grad.0", 0, t + std::chrono::microseconds(50));
  timeline.negotiate_done("grad.0", t + std::chrono::microseconds(80));
  timeline.complete("grad.0", "MEMCPY_IN_FUSION_BUFFER", t, t + std::chrono::microseconds(90));
  timeline.cycle_mark();
  timeline.stop();
  EXPECT_FALSE(timeline.active());
  timeline.instant("x", "after stop");  // ignored
  const std::string text = read_file(path);
  EXPECT_TRUE(valid_json(path)) << text;
  EXPECT_NE(text.find("\"name\":\"NEGOTIATE\""), std::string::npos);
  EXPECT_NE(text.find("\"dur\":80"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 0 ready"), std::string::npos);
  EXPECT_NE(text.find("rank 1 ready"), std::string::npos);
  EXPECT_NE(text.find("MEMCPY_IN_FUSION_BUFFER"), std::string::npos);
  EXPECT_NE(text.find("CYCLE_START"), std::string::npos);
  EXPECT_EQ(text.find("before start"), std::string::npos);
  EXPECT_EQ(text.find("after stop"), std::string::npos);
  // A second start replaces the file; stop twice is fine.
  timeline.start(path, false);
  timeline.instant("y", "second");
  timeline.cycle_mark();  // mark_cycles off
  timeline.stop();
  timeline.stop();
  const std::string second = read_file(path);
  EXPECT_TRUE(valid_json(path)) << second;
  EXPECT_NE(second.find("second"), std::string::npos);
  EXPECT_EQ(second.find("CYCLE_START"), std::string::npos);
  std::remove(path.c_str());
}

TEST(Timeline, ReportsDroppedEventsInTheFile) {
  const std::string path = test::timeline_path("dropped");
  Timeline timeline(1 << 20, /*queue_capacity=*/2);
  timeline.start(path, false);
  // Far more than the writer can drain between two pushes of a tight loop
  // is not guaranteed, so push until something was dropped (bounded).
  for (int i = 0; i < 200000; ++i) timeline.instant("t", "e");
  timeline.stop();
  const std::string text = read_file(path);
  EXPECT_TRUE(valid_json(path));
  EXPECT_NE(text.find("events (queue full)"), std::string::npos);
  std::remove(path.c_str());
}

// As the coordinator and the GPU completion pollers do: complete() from
// several threads while the timeline is restarted; every file stays valid.
TEST(Timeline, EventsFromSeveralThreadsWhileRestarting) {
  const std::string path = test::timeline_path("threads");
  Timeline timeline(1 << 16);
  timeline.start(path, false);
  std::atomic<bool> stop{false};
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&, t] {
      const std::string row = "tensor." + std::to_string(t);
      while (!stop) {
        const auto now = TimelineClock::now();
        timeline.complete(row, "NCCL_ALLREDUCE", now, now);
      }
    });
  }
  for (int restart = 0; restart < 5; ++restart) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    timeline.start(path, false);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop = true;
  for (std::thread& producer : producers) producer.join();
  timeline.stop();
  EXPECT_TRUE(valid_json(path));
  EXPECT_FALSE(test::traced_events(path, "NCCL_ALLREDUCE").empty());
  std::remove(path.c_str());
}

TensorEntry named_entry(const std::string& name) {
  TensorEntry entry;
  entry.request.name = name;
  return entry;
}

// One event per tensor, on its row, from the span's start to end(), which
// another thread may call.
TEST(TimelineSpan, EndsWithOneEventPerTensorOnAnyThread) {
  const std::string path = test::timeline_path("span");
  Timeline timeline(1 << 20);
  timeline.start(path, false);
  const TensorEntry a = named_entry("a"), b = named_entry("b");
  const long long before = test::timeline_micros();
  const TimelineSpan span(&timeline, "MEMCPY_IN_HOST_BUFFER", {&a, &b});
  const TimelineSpan single(&timeline, "NCCL_BROADCAST", a);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // end and start differ
  const long long ending = test::timeline_micros();
  std::thread([&] {
    span.end();
    single.end();
  }).join();
  timeline.stop();
  test::expect_spans(test::traced_events(path, "MEMCPY_IN_HOST_BUFFER"), {"a", "b"}, before,
                     ending);
  test::expect_spans(test::traced_events(path, "NCCL_BROADCAST"), {"a"}, before, ending);
  std::remove(path.c_str());
}

// A span started while the timeline is off (or without one) records
// nothing, even if the timeline is on by its end.
TEST(TimelineSpan, StartedWhileOffRecordsNothing) {
  const std::string path = test::timeline_path("span_off");
  Timeline timeline(1 << 20);
  const TensorEntry a = named_entry("a");
  const TimelineSpan off(&timeline, "NCCL_ALLREDUCE", a);
  const TimelineSpan none(nullptr, "NCCL_ALLREDUCE", a);
  const TimelineSpan empty;
  timeline.start(path, false);
  off.end();
  none.end();
  empty.end();
  timeline.stop();
  EXPECT_TRUE(valid_json(path));
  EXPECT_TRUE(test::traced_events(path).empty());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hvd
