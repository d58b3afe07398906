// Log levels in any case (horovodrun passes HOROVOD_LOG_LEVEL=DEBUG) and
// the line format, with and without the time.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "core/diagnostics/logging.h"

namespace hvd {
namespace {

TEST(Logging, LevelsInAnyCase) {
  EXPECT_EQ(parse_log_level("DEBUG"), LogLevel::kDebug);
  EXPECT_EQ(parse_log_level("debug"), LogLevel::kDebug);
  EXPECT_EQ(parse_log_level("Trace"), LogLevel::kTrace);
  EXPECT_EQ(parse_log_level("INFO"), LogLevel::kInfo);
  EXPECT_EQ(parse_log_level("WARNING"), LogLevel::kWarning);
  EXPECT_EQ(parse_log_level("ERROR"), LogLevel::kError);
  EXPECT_EQ(parse_log_level("FATAL"), LogLevel::kError);
  EXPECT_EQ(parse_log_level("loud"), std::nullopt);
  EXPECT_EQ(parse_log_level(""), std::nullopt);
}

TEST(Logging, LineWithRankAndOptionalLocalTime) {
  EXPECT_EQ(format_log_line(3, LogLevel::kWarning, "stalled", std::nullopt),
            "[horovodcpp 3] WARNING: stalled");
  EXPECT_EQ(format_log_line(-1, LogLevel::kDebug, "x", std::nullopt), "[horovodcpp] DEBUG: x");
  const char* tz = std::getenv("TZ");
  const std::string saved = tz ? tz : "";
  setenv("TZ", "UTC", 1);
  tzset();
  const auto time = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000) +
                                                          std::chrono::microseconds(42));
  EXPECT_EQ(format_log_line(0, LogLevel::kInfo, "hi", time),
            "[horovodcpp 0] 2023-11-14 22:13:20.000042 INFO: hi");
  if (tz) {
    setenv("TZ", saved.c_str(), 1);
  } else {
    unsetenv("TZ");
  }
  tzset();
}

}  // namespace
}  // namespace hvd
