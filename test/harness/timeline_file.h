// Reading back, in tests, a timeline file that TimelineFileWriter
// wrote: its text, whether it is valid JSON, and its complete ('X') events
// with the names of their rows.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/diagnostics/timeline.h"

namespace hvd::test {

inline std::string timeline_path(const std::string& tag) {
  return "/tmp/hvd_timeline_test_" + std::to_string(::getpid()) + "_" + tag + ".json";
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline bool valid_json(const std::string& path) {
  const std::string command = "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' " + path;
  return std::system(command.c_str()) == 0;
}

// Whether the file is JSON once its last event, which a write killed midway
// may have cut short, is dropped and the closing put back (docs/faults.md).
inline bool json_without_last_event(const std::string& path) {
  const std::string command =
      "python3 -c 'import json,sys; t=open(sys.argv[1]).read(); "
      "json.loads(t[:t.rfind(\",\\n{\")] + \"]}\")' " +
      path;
  return std::system(command.c_str()) == 0;
}

struct TracedEvent {
  std::string row;
  std::string name;
  long long ts_us = 0;
  long long dur_us = 0;
};

// The complete events of the file, in file order, optionally only those
// named `name`. Plain names only (no escaped characters).
inline std::vector<TracedEvent> traced_events(const std::string& path,
                                              const std::string& name = "") {
  static const std::regex row_line(
      R"re("tid":(\d+),"name":"thread_name","args":\{"name":"([^"]*)"\})re");
  static const std::regex event_line(
      R"re(\{"ph":"X","pid":0,"tid":(\d+),"ts":(-?\d+),"dur":(\d+),"name":"([^"]*)"\})re");
  std::map<std::string, std::string> rows;  // by tid
  std::vector<TracedEvent> events;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row_line)) {
      rows[m[1]] = m[2];
    } else if (std::regex_search(line, m, event_line) && (name.empty() || m[4] == name)) {
      events.push_back({rows[m[1]], m[4], std::stoll(m[2]), std::stoll(m[3])});
    }
  }
  return events;
}

// Now on the timeline's clock, in its unit.
inline long long timeline_micros() {
  return TimelineClock::now().time_since_epoch() / std::chrono::microseconds(1);
}

// `events` are one per row of `rows`, in that order, each starting within
// [started, ended] and ending at or after `ended` (times of timeline_micros()).
inline void expect_spans(const std::vector<TracedEvent>& events,
                         const std::vector<std::string>& rows, long long started, long long ended) {
  ASSERT_EQ(events.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(events[i].row, rows[i]);
    EXPECT_GE(events[i].ts_us, started) << rows[i];
    EXPECT_LE(events[i].ts_us, ended) << rows[i];
    EXPECT_GE(events[i].ts_us + events[i].dur_us, ended) << rows[i];
  }
}

}  // namespace hvd::test
