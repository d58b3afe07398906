// The TCP store's wire format, shared by TcpStore (client) and
// TcpStoreServer. All integers are big-endian.
//
//   request:  u8 op | u32 key_len | u64 value_len | key | value
//   reply:    u8 status | u64 payload_len | payload
//
// SET stores value (reply OK, empty payload). GET replies OK + value or
// NOT_FOUND at once; the client polls until its timeout. ADD carries an
// 8-byte signed delta as value and replies OK + the 8-byte new total, or
// ERROR + a message (stored value not an integer, overflow).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hvd {
namespace store_protocol {

enum Op : std::uint8_t { kSet = 1, kGet = 2, kAdd = 3 };
enum Status : std::uint8_t { kOk = 0, kNotFound = 1, kError = 2 };

constexpr std::size_t kRequestHeaderSize = 1 + 4 + 8;
constexpr std::size_t kReplyHeaderSize = 1 + 8;
constexpr std::uint64_t kMaxKeySize = 1ULL << 20;     // 1 MiB
constexpr std::uint64_t kMaxValueSize = 64ULL << 20;  // 64 MiB

inline void put_u32(std::string* out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out->push_back(static_cast<char>((v >> shift) & 0xFF));
}

inline void put_u64(std::string* out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out->push_back(static_cast<char>((v >> shift) & 0xFF));
}

inline std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

inline std::uint64_t get_u64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

inline std::string encode_i64(long long v) {
  std::string out;
  put_u64(&out, static_cast<std::uint64_t>(v));
  return out;
}

inline long long decode_i64(const char* p) { return static_cast<long long>(get_u64(p)); }

}  // namespace store_protocol
}  // namespace hvd
