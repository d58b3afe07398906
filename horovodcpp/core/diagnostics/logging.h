// HVD_LOG(level) << ...: one line on stderr, prefixed with the rank.
// The level comes from HOROVODCPP_LOG_LEVEL (or HOROVOD_LOG_LEVEL), in any
// case as in Horovod (horovodrun passes "DEBUG"): trace, debug, info,
// warning (default), error, fatal (logged as error). HOROVODCPP_LOG_HIDE_TIME
// =0 puts the local time on every line; by default lines carry none
// (Horovod's default is to show it; here the launcher's and the scheduler's
// logs already time the output, and short lines are easier to compare).
#pragma once

#include <chrono>
#include <optional>
#include <sstream>
#include <string>

namespace hvd {

enum class LogLevel { kTrace, kDebug, kInfo, kWarning, kError };

LogLevel log_level();
// The rank printed on each line; -1 (before init) prints no rank.
void set_log_rank(int rank);

// "DEBUG", "debug", ... -> the level ("fatal" -> kError); nullopt otherwise.
std::optional<LogLevel> parse_log_level(const std::string& text);

// A line as LogLine prints it, without the newline:
// "[horovodcpp 3] [2024-05-06 07:08:09.123456 ]WARNING: message"
// (the time, local, when `time` is given).
std::string format_log_line(int rank, LogLevel level, const std::string& message,
                            std::optional<std::chrono::system_clock::time_point> time);

class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine();
  template <typename T>
  LogLine& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace hvd

#define HVD_LOG(level)                                  \
  if (::hvd::LogLevel::k##level < ::hvd::log_level()) { \
  } else                                                \
    ::hvd::LogLine(::hvd::LogLevel::k##level)
