// Small text helpers shared by hvdrun's parsers.
#pragma once

#include <string>

#include "runner/options.h"

namespace hvdrun {

[[noreturn]] inline void usage(const std::string& message) { throw UsageError{message}; }

inline std::string trim(const std::string& text) {
  std::size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  std::size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

}  // namespace hvdrun
