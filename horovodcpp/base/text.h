// Small text helpers for parsers of the library and of hvdrun.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

namespace hvd {

// `text` without leading and trailing spaces, tabs and line ends.
inline std::string trim(const std::string& text) {
  std::size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  std::size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

// Not empty, and decimal digits only.
inline bool all_digits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

}  // namespace hvd
