#include "core/diagnostics/logging.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "horovodcpp/errors.h"
#include "settings/settings.h"

namespace hvd {
namespace {

std::atomic<int> g_log_rank{-1};

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

// As Horovod's HOROVOD_LOG_HIDE_TIME. Logging cannot fail: a malformed
// value is reported and the default (shown) kept.
bool show_time() {
  static const bool show = [] {
    try {
      return !settings::read_bool(settings::Setting::kLogHideTime);
    } catch (const InvalidArgument& e) {
      std::fprintf(stderr, "[horovodcpp] WARNING: %s; showing the time\n", e.what());
      return true;
    }
  }();
  return show;
}

}  // namespace

std::optional<LogLevel> parse_log_level(const std::string& text) {
  std::string name = text;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name == "trace") return LogLevel::kTrace;
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warning") return LogLevel::kWarning;
  if (name == "error" || name == "fatal") return LogLevel::kError;
  return std::nullopt;
}

LogLevel log_level() {
  // Read once: logging sits on hot paths.
  static const LogLevel level = [] {
    const auto text = settings::read_text(settings::Setting::kLogLevel);
    if (!text) return LogLevel::kWarning;
    if (const auto parsed = parse_log_level(*text)) return *parsed;
    // Horovod takes an unknown level as warning; so do we, but say so.
    std::fprintf(stderr,
                 "[horovodcpp] WARNING: HOROVODCPP_LOG_LEVEL='%s' is none of trace, debug, info, "
                 "warning, error, fatal; logging at warning\n",
                 text->c_str());
    return LogLevel::kWarning;
  }();
  return level;
}

void set_log_rank(int rank) { g_log_rank = rank; }

std::string format_log_line(int rank, LogLevel level, const std::string& message,
                            std::optional<std::chrono::system_clock::time_point> time) {
  std::string line = rank >= 0 ? "[horovodcpp " + std::to_string(rank) + "] " : "[horovodcpp] ";
  if (time) {
    const std::time_t seconds = std::chrono::system_clock::to_time_t(*time);
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                            time->time_since_epoch() % std::chrono::seconds(1))
                            .count();
    std::tm local{};
    localtime_r(&seconds, &local);
    char text[40];
    std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
    std::snprintf(text + n, sizeof text - n, ".%06lld ", static_cast<long long>(micros));
    line += text;
  }
  return line + level_name(level) + ": " + message;
}

LogLine::~LogLine() {
  std::optional<std::chrono::system_clock::time_point> now;
  if (show_time()) now = std::chrono::system_clock::now();
  const std::string line = format_log_line(g_log_rank, level_, stream_.str(), now);
  // One fprintf per line so lines of different threads do not interleave.
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace hvd
