// Timeline: a Chrome-trace JSON file (chrome://tracing, Perfetto) of each
// tensor's life on rank 0: NEGOTIATE (with each rank's arrival), QUEUE,
// MEMCPY_IN_FUSION_BUFFER, the backend op (e.g. MPI_ALLREDUCE), MEMCPY_OUT;
// for CUDA tensors the NCCL op or the staged copies (TimelineSpan).
//
// Producers (the coordinator, the GPU completion pollers) only push events
// onto a bounded queue (never blocking: when the queue is full the event is
// dropped and counted); a writer thread of its own formats and writes them.
// The file stops growing at HOROVODCPP_TIMELINE_MAX_BYTES (default 256 MiB).
//
// The file is valid JSON at all times, not only once stop() returns: a job
// that is killed (a failed rank, SIGKILL, a scheduler's time limit) is when
// a timeline is wanted most. Each flush (about once a second) writes the new
// events and the closing "]}" in one write over the previous closing, so a
// process killed at any moment leaves a file that json.load, Perfetto and
// chrome://tracing open, missing at most the last second of events.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace hvd {

using TimelineClock = std::chrono::steady_clock;

// One trace event. `row` is the tensor name: one trace thread per row.
struct TimelineEvent {
  enum class Kind : char { kComplete = 'X', kInstant = 'i' };
  Kind kind = Kind::kInstant;
  std::string row;
  std::string name;
  long long ts_us = 0;
  long long dur_us = 0;  // kComplete only
  bool global = false;   // kInstant: drawn across every row (cycle marks)
};

// A bounded multi-producer queue of events: push never blocks on a full
// queue; it drops the event and counts it.
class TimelineEventQueue {
 public:
  explicit TimelineEventQueue(std::size_t capacity) : capacity_(capacity) {}
  // False (and one more dropped) when full or closed.
  bool push(TimelineEvent event);
  // Waits up to `timeout` for events; returns all queued ones. An empty
  // result with closed() true means no more will come.
  std::vector<TimelineEvent> pop_all(std::chrono::milliseconds timeout);
  void open();
  void close();
  bool closed() const;
  long long dropped() const { return dropped_.load(); }

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<TimelineEvent> events_;
  bool closed_ = true;
  std::atomic<long long> dropped_{0};
};

// Formats events as Chrome-trace JSON into one file, under a byte budget.
// The file on disk is complete JSON after the constructor and every flush().
// Not thread-safe: used by one thread at a time.
class TimelineFileWriter {
 public:
  // Throws InvalidArgument if `path` cannot be opened.
  TimelineFileWriter(const std::string& path, long long max_bytes);
  ~TimelineFileWriter();  // finish(0) if not finished
  // Buffers the event; flush() writes it.
  void write(const TimelineEvent& event);
  // Writes the buffered events and the closing brackets after the events
  // already written, in one write.
  void flush();
  // Notes `dropped` events (if any), closes the JSON and the file.
  void finish(long long dropped);
  long long truncated() const { return truncated_; }  // events over the byte budget

 private:
  void put(const std::string& text);
  int tid_of(const std::string& row);

  // pwrite(2)s all of `text` at `offset`; false (after a warning) on an error.
  bool write_at(long long offset, const std::string& text);

  int fd_ = -1;
  std::string pending_;    // formatted, not yet written
  long long written_ = 0;  // bytes of events in the file; the closing follows
  long long max_bytes_;
  long long bytes_ = 0;
  long long truncated_ = 0;
  std::unordered_map<std::string, int> tids_;
};

class Timeline {
 public:
  static constexpr std::size_t kDefaultQueueCapacity = 1 << 16;

  static constexpr std::chrono::milliseconds kDefaultFlushInterval{1000};

  // `max_bytes`: the file stops growing here (HOROVODCPP_TIMELINE_MAX_BYTES).
  // `flush_interval`: how often the writer makes the file complete JSON.
  explicit Timeline(long long max_bytes, std::size_t queue_capacity = kDefaultQueueCapacity,
                    std::chrono::milliseconds flush_interval = kDefaultFlushInterval);
  ~Timeline();  // stop()

  // Any thread. start() while started stops the current file first.
  // Throws InvalidArgument if the file cannot be opened.
  void start(const std::string& path, bool mark_cycles);
  void stop();
  bool active() const { return active_.load(std::memory_order_relaxed); }

  // Producers: any thread. Cheap no-ops when not active.
  void complete(const std::string& row, const std::string& name, TimelineClock::time_point from,
                TimelineClock::time_point to);
  void instant(const std::string& row, const std::string& name,
               TimelineClock::time_point at = TimelineClock::now());
  // Negotiation (rank 0, the coordinator thread only): a rank's request
  // arrived; then the response.
  void negotiate_arrival(const std::string& tensor, int rank, TimelineClock::time_point at);
  void negotiate_done(const std::string& tensor, TimelineClock::time_point at);
  void cycle_mark();

 private:
  static long long micros(TimelineClock::time_point t);

  long long max_bytes_;
  std::chrono::milliseconds flush_interval_;
  TimelineEventQueue queue_;
  std::mutex control_mutex_;  // start/stop
  std::atomic<bool> active_{false};
  std::atomic<bool> mark_cycles_{false};
  std::thread writer_;
  // Coordinator thread only: when each pending tensor's first request came.
  std::unordered_map<std::string, TimelineClock::time_point> negotiating_;
};

}  // namespace hvd
