#include "core/diagnostics/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/check.h"
#include "core/diagnostics/logging.h"

namespace hvd {
namespace {

// Room kept under the byte budget for the closing notes and "]}".
constexpr long long kTailReserve = 512;
// Follows the last event at all times.
constexpr char kClosing[] = "\n]}\n";
// Events per write: about a page, so that a killed write loses at most one.
constexpr std::size_t kPieceBytes = 4000;

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace

// ---- TimelineEventQueue ----

bool TimelineEventQueue::push(TimelineEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return false;  // stopped: not counted, there is no file to note it in
    if (events_.size() >= capacity_) {
      ++dropped_;
      return false;
    }
    events_.push_back(std::move(event));
  }
  cv_.notify_one();
  return true;
}

std::vector<TimelineEvent> TimelineEventQueue::pop_all(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, timeout, [this] { return closed_ || !events_.empty(); });
  std::vector<TimelineEvent> out(std::make_move_iterator(events_.begin()),
                                 std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

void TimelineEventQueue::open() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
  dropped_ = 0;
  closed_ = false;
}

void TimelineEventQueue::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool TimelineEventQueue::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

// ---- TimelineFileWriter ----

TimelineFileWriter::TimelineFileWriter(const std::string& path, long long max_bytes)
    : max_bytes_(max_bytes) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  HVD_CHECK(fd_ >= 0, InvalidArgument,
            "cannot open timeline file '" << path << "': " << std::strerror(errno));
  put("{\"traceEvents\":[\n");
  put("{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"horovodcpp rank "
      "0\"}}");
  flush();
}

TimelineFileWriter::~TimelineFileWriter() {
  if (fd_ >= 0) finish(0);
}

void TimelineFileWriter::put(const std::string& text) {
  pending_ += text;
  bytes_ += static_cast<long long>(text.size());
}

int TimelineFileWriter::tid_of(const std::string& row) {
  auto it = tids_.find(row);
  if (it != tids_.end()) return it->second;
  const int tid = static_cast<int>(tids_.size()) + 1;
  tids_.emplace(row, tid);
  put(",\n{\"ph\":\"M\",\"pid\":0,\"tid\":" + std::to_string(tid) +
      ",\"name\":\"thread_name\",\"args\":{\"name\":" + json_string(row) + "}}");
  put(",\n{\"ph\":\"M\",\"pid\":0,\"tid\":" + std::to_string(tid) +
      ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" + std::to_string(tid) + "}}");
  return tid;
}

void TimelineFileWriter::write(const TimelineEvent& event) {
  if (fd_ < 0) return;
  // Worst case: two metadata lines for a new row plus the event itself.
  const long long estimate = 3 * (static_cast<long long>(event.row.size()) + 96) +
                             static_cast<long long>(event.name.size());
  if (bytes_ + estimate + kTailReserve > max_bytes_) {
    ++truncated_;
    return;
  }
  const int tid = event.global ? 0 : tid_of(event.row);
  std::string line = ",\n{\"ph\":\"";
  line += static_cast<char>(event.kind);
  line += "\",\"pid\":0,\"tid\":" + std::to_string(tid) + ",\"ts\":" + std::to_string(event.ts_us);
  if (event.kind == TimelineEvent::Kind::kComplete) {
    line += ",\"dur\":" + std::to_string(event.dur_us);
  } else {
    line += event.global ? ",\"s\":\"g\"" : ",\"s\":\"t\"";
  }
  line += ",\"name\":" + json_string(event.name) + "}";
  put(line);
}

void TimelineFileWriter::flush() {
  if (fd_ < 0 || (pending_.empty() && written_ > 0)) return;
  // The new events overwrite the old closing and end with a new one, a page
  // of events at a time: the kernel may stop a write killed midway only
  // between pages, so a kill cuts at most one piece short.
  std::size_t from = 0;
  do {
    std::size_t to = pending_.size();
    if (to - from > kPieceBytes) {
      const std::size_t cut = pending_.rfind(",\n{", from + kPieceBytes);
      to = cut != std::string::npos && cut > from ? cut : pending_.find(",\n{", from + 1);
      if (to == std::string::npos) to = pending_.size();
    }
    if (!write_at(written_, pending_.substr(from, to - from) + kClosing)) break;
    written_ += static_cast<long long>(to - from);
    from = to;
  } while (from < pending_.size());
  pending_.clear();
}

bool TimelineFileWriter::write_at(long long offset, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pwrite(fd_, text.data() + done, text.size() - done,
                               static_cast<off_t>(offset + static_cast<long long>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      HVD_LOG(Warning) << "timeline: cannot write: " << std::strerror(errno);
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

void TimelineFileWriter::finish(long long dropped) {
  if (fd_ < 0) return;
  auto note = [this](const std::string& text) {
    put(",\n{\"ph\":\"i\",\"pid\":0,\"tid\":0,\"ts\":0,\"s\":\"g\",\"name\":" + json_string(text) +
        "}");
  };
  if (truncated_ > 0) {
    note("timeline truncated at HOROVODCPP_TIMELINE_MAX_BYTES=" + std::to_string(max_bytes_) +
         ": " + std::to_string(truncated_) + " events not written");
  }
  if (dropped > 0) note("dropped " + std::to_string(dropped) + " events (queue full)");
  flush();
  ::close(fd_);
  fd_ = -1;
}

// ---- Timeline ----

Timeline::Timeline(long long max_bytes, std::size_t queue_capacity,
                   std::chrono::milliseconds flush_interval)
    : max_bytes_(max_bytes), flush_interval_(flush_interval), queue_(queue_capacity) {}

Timeline::~Timeline() { stop(); }

void Timeline::start(const std::string& path, bool mark_cycles) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (writer_.joinable()) {
    active_ = false;
    queue_.close();
    writer_.join();
  }
  auto file = std::make_shared<TimelineFileWriter>(path, max_bytes_);
  mark_cycles_ = mark_cycles;
  queue_.open();
  writer_ = std::thread([this, file] {
    auto last_flush = TimelineClock::now();
    for (;;) {
      std::vector<TimelineEvent> events =
          queue_.pop_all(std::min(flush_interval_, std::chrono::milliseconds(200)));
      for (const TimelineEvent& event : events) file->write(event);
      if (events.empty() && queue_.closed()) break;
      if (TimelineClock::now() - last_flush >= flush_interval_) {
        file->flush();
        last_flush = TimelineClock::now();
      }
    }
    // Closed: anything pushed before close() was drained above.
    for (const TimelineEvent& event : queue_.pop_all(std::chrono::milliseconds(0))) {
      file->write(event);
    }
    file->finish(queue_.dropped());
  });
  active_ = true;
  HVD_LOG(Info) << "timeline: writing " << path;
}

void Timeline::stop() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  active_ = false;
  if (!writer_.joinable()) return;
  queue_.close();
  writer_.join();
}

long long Timeline::micros(TimelineClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

void Timeline::complete(const std::string& row, const std::string& name,
                        TimelineClock::time_point from, TimelineClock::time_point to) {
  if (!active()) return;
  TimelineEvent event;
  event.kind = TimelineEvent::Kind::kComplete;
  event.row = row;
  event.name = name;
  event.ts_us = micros(from);
  event.dur_us = std::max<long long>(0, micros(to) - micros(from));
  queue_.push(std::move(event));
}

void Timeline::instant(const std::string& row, const std::string& name,
                       TimelineClock::time_point at) {
  if (!active()) return;
  TimelineEvent event;
  event.row = row;
  event.name = name;
  event.ts_us = micros(at);
  queue_.push(std::move(event));
}

void Timeline::negotiate_arrival(const std::string& tensor, int rank,
                                 TimelineClock::time_point at) {
  if (!active()) return;
  negotiating_.emplace(tensor, at);  // keeps the first rank's time
  instant(tensor, "rank " + std::to_string(rank) + " ready", at);
}

void Timeline::negotiate_done(const std::string& tensor, TimelineClock::time_point at) {
  if (negotiating_.empty()) return;
  auto it = negotiating_.find(tensor);
  if (it == negotiating_.end()) return;
  complete(tensor, "NEGOTIATE", it->second, at);
  negotiating_.erase(it);
}

void Timeline::cycle_mark() {
  if (!active() || !mark_cycles_.load(std::memory_order_relaxed)) return;
  TimelineEvent event;
  event.name = "CYCLE_START";
  event.global = true;
  event.ts_us = micros(TimelineClock::now());
  queue_.push(std::move(event));
}

}  // namespace hvd
