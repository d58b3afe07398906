// double -> float16/bfloat16 with a single rounding to nearest even: the
// reference the tests compute exact expected values with (the library
// scales in float32 and has no use for it).
#pragma once

#include <cstdint>

#include "core/execution/half.h"

namespace hvd {
namespace test {

// Rounds a double to float with round-to-odd: truncate toward zero and set
// the last bit when inexact. Rounding that float to nearest-even at a
// precision at least two bits narrower (float16: 11, bfloat16: 8 of 24) gives
// the correctly rounded result of the double; plain double->float->half
// rounding twice would not (e.g. 1 + 2^-11 + 2^-40 would round down).
inline float double_to_float_round_odd(double value) {
  using half_detail::bits_float;
  using half_detail::float_bits;
  const float nearest = static_cast<float>(value);
  const std::uint32_t bits = float_bits(nearest);
  const double magnitude = value < 0 ? -value : value;
  const double nearest_magnitude =
      nearest < 0 ? -static_cast<double>(nearest) : static_cast<double>(nearest);
  // Rounded away from zero: step one unit back toward zero (inf -> FLT_MAX).
  const std::uint32_t truncated = nearest_magnitude > magnitude ? bits - 1 : bits;
  // value != value (NaN) compares unequal too: keep NaN as it is.
  const bool inexact = static_cast<double>(nearest) != value && value == value;
  return bits_float(inexact ? (truncated | 1u) : bits);
}

inline std::uint16_t double_to_half_bits(double value) {
  return float_to_half_bits(double_to_float_round_odd(value));
}
inline std::uint16_t double_to_bfloat16_bits(double value) {
  return float_to_bfloat16_bits(double_to_float_round_odd(value));
}

}  // namespace test
}  // namespace hvd
