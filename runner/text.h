// Small text helpers shared by hvdrun's parsers.
#pragma once

#include <algorithm>
#include <cctype>
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

inline std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace hvdrun
