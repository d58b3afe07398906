// HVD_LOG(level) << ...: one line on stderr, prefixed with the rank.
// The level comes from HOROVODCPP_LOG_LEVEL (or HOROVOD_LOG_LEVEL):
// trace, debug, info, warning (default), error.
#pragma once

#include <sstream>

namespace hvd {

enum class LogLevel { kTrace, kDebug, kInfo, kWarning, kError };

LogLevel log_level();
// The rank printed on each line; -1 (before init) prints no rank.
void set_log_rank(int rank);

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

#define HVD_LOG(level)                                           \
  if (::hvd::LogLevel::k##level < ::hvd::log_level()) {          \
  } else                                                         \
    ::hvd::LogLine(::hvd::LogLevel::k##level)
