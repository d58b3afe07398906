// Small text helpers shared by hvdrun's parsers.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

#include "base/text.h"
#include "runner/cli/options.h"

namespace hvdrun {

[[noreturn]] inline void usage(const std::string& message) { throw UsageError{message}; }

using hvd::all_digits;
using hvd::trim;

inline std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace hvdrun
