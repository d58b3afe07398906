// "4", "64K", "64M", "1GiB" -> bytes (binary multiples), shared by the
// benchmarks' --sizes/--max-bytes flags.
#pragma once

#include <cctype>
#include <cstdlib>
#include <string>

// False for anything else (and for 0).
inline bool parse_bytes(const std::string& text, std::size_t* out) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return false;
  std::string suffix(end);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::size_t scale = 1;
  if (!suffix.empty() && (suffix[0] == 'K' || suffix[0] == 'M' || suffix[0] == 'G')) {
    scale = suffix[0] == 'K' ? 1024 : suffix[0] == 'M' ? kMiB : 1024 * kMiB;
    suffix.erase(0, 1);
    if (suffix == "I" || suffix == "IB") suffix.clear();
  }
  if (!suffix.empty() && suffix != "B") return false;
  *out = static_cast<std::size_t>(value) * scale;
  return value > 0;
}
