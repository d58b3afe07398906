// Bit conversions between float32 and float16 / bfloat16, round to nearest
// even, with infinities, NaN and subnormals handled.
//
// The conversions are inline and branch-free (selects, no early returns) so
// that the reduction loops (reduction_kernels.h) vectorize. They rely only on IEEE
// float32 addition in round-to-nearest mode. Flush-to-zero / denormals-are-
// zero modes do not change float16 results (the float additions below never
// take or produce float32 subnormals, except for inputs that round to zero
// anyway); bfloat16 subnormals are float32 subnormals and flush like them.
// NaN stays NaN in every direction: its sign and top payload bits are kept and
// the quiet bit is set.
#pragma once

#include <cstdint>
#include <cstring>

namespace hvd {
namespace half_detail {

inline std::uint32_t float_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline float bits_float(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// c ? a : b as mask arithmetic: keeps both inputs computed unconditionally,
// so the compiler cannot move a float operation under a branch (which it then
// may not if-convert, the operation could raise an FP exception).
inline std::uint32_t select(bool c, std::uint32_t a, std::uint32_t b) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(c);
  return (a & mask) | (b & ~mask);
}

}  // namespace half_detail

inline float half_bits_to_float(std::uint16_t bits) {
  const std::uint32_t h = bits;
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exp_mant = (h & 0x7fffu) << 13;  // aligned to float32
  const std::uint32_t exp = exp_mant & 0x0f800000u;
  // Normal: rebias the exponent from 15 to 127.
  const std::uint32_t normal = exp_mant + (112u << 23);
  // Subnormal (exp == 0): m * 2^-24 = float(2^-14 * (1 + m/1024)) - 2^-14,
  // exact and a normal float32.
  const std::uint32_t subnormal = half_detail::float_bits(
      half_detail::bits_float(exp_mant + (113u << 23)) - half_detail::bits_float(113u << 23));
  // Inf/NaN: all exponent bits set; NaN gets the quiet bit.
  const std::uint32_t mant = exp_mant & 0x007fffffu;
  const std::uint32_t quiet = half_detail::select(mant != 0, 0x00400000u, 0u);
  const std::uint32_t inf_nan = 0x7f800000u | mant | quiet;
  const std::uint32_t result = half_detail::select(
      exp == 0x0f800000u, inf_nan, half_detail::select(exp == 0, subnormal, normal));
  return half_detail::bits_float(sign | result);
}

inline std::uint16_t float_to_half_bits(float value) {
  const std::uint32_t f = half_detail::float_bits(value);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const std::uint32_t a = f & 0x7fffffffu;
  // Normal range: rebias the exponent and add the rounding bias
  // 0xfff + (lowest kept bit) for ties-to-even; a carry into the exponent is
  // the right result, up to and including overflow to infinity.
  const std::uint32_t normal = (a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
  // |value| < 2^-14: adding 0.5f aligns the result's ulp (2^-24) with the
  // float32 ulp of 0.5, so the FPU's round-to-nearest-even does the rounding.
  const std::uint32_t magic = 126u << 23;  // 0.5f
  const std::uint32_t subnormal =
      half_detail::float_bits(half_detail::bits_float(a) + half_detail::bits_float(magic)) - magic;
  const std::uint32_t nan = 0x7e00u | ((a >> 13) & 0x03ffu);
  std::uint32_t result = half_detail::select(a < (113u << 23), subnormal, normal);
  result = half_detail::select(a >= (143u << 23), 0x7c00u, result);  // >= 65536: infinity
  result = half_detail::select(a > 0x7f800000u, nan, result);
  return static_cast<std::uint16_t>(sign | result);
}

inline float bfloat16_bits_to_float(std::uint16_t bits) {
  const std::uint32_t f = static_cast<std::uint32_t>(bits) << 16;
  const bool is_nan = (f & 0x7fffffffu) > 0x7f800000u;
  return half_detail::bits_float(is_nan ? (f | 0x00400000u) : f);
}

inline std::uint16_t float_to_bfloat16_bits(float value) {
  const std::uint32_t f = half_detail::float_bits(value);
  // Same exponent range as float32: round the low 16 bits to nearest even;
  // a carry is correct everywhere, overflow to infinity included.
  const std::uint32_t rounded = (f + 0x7fffu + ((f >> 16) & 1u)) >> 16;
  const std::uint32_t nan = (f >> 16) | 0x0040u;
  const bool is_nan = (f & 0x7fffffffu) > 0x7f800000u;
  return static_cast<std::uint16_t>(is_nan ? nan : rounded);
}

}  // namespace hvd
