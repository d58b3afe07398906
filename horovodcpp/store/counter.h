// A Store counter (what add() keeps under a key): the value in decimal, as
// every Store writes it.
#pragma once

#include <charconv>
#include <string>

namespace hvd {

// The counter `text` holds; false when it is not a whole decimal long long.
inline bool parse_counter(const std::string& text, long long* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto result = std::from_chars(text.data(), end, *out);
  return result.ec == std::errc() && result.ptr == end;
}

}  // namespace hvd
