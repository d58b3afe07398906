// Reading back, in tests, a timeline file that TimelineFileWriter
// wrote: its text, whether it is valid JSON, and its complete ('X') events
// with the names of their rows.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

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
  const std::string command =
      "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' " + path;
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

}  // namespace hvd::test
