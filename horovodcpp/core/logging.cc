#include "core/logging.h"

#include <atomic>
#include <cstdio>
#include <string>

#include "core/env.h"

namespace hvd {
namespace {

std::atomic<int> g_log_rank{-1};

LogLevel parse_level(const std::string& text) {
  if (text == "trace") return LogLevel::kTrace;
  if (text == "debug") return LogLevel::kDebug;
  if (text == "info") return LogLevel::kInfo;
  if (text == "error" || text == "fatal") return LogLevel::kError;
  return LogLevel::kWarning;
}

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return "TRACE";
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARNING";
    case LogLevel::kError: return "ERROR";
  }
  return "?";
}

}  // namespace

LogLevel log_level() {
  // Read once: logging sits on hot paths.
  static const LogLevel level = parse_level(env_setting("LOG_LEVEL").value_or("warning"));
  return level;
}

void set_log_rank(int rank) { g_log_rank = rank; }

LogLine::~LogLine() {
  int rank = g_log_rank;
  std::string prefix = rank >= 0 ? "[horovodcpp " + std::to_string(rank) + "] " : "[horovodcpp] ";
  // One fprintf per line so lines of different threads do not interleave.
  std::fprintf(stderr, "%s%s: %s\n", prefix.c_str(), level_name(level_), stream_.str().c_str());
}

}  // namespace hvd
