// How each DataType is stored and computed in the element-wise kernels, and
// the reduction operations on the compute type. Internal to the reduction
// files (reduction.cc, reduction_kernels.h, simd_dispatch.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/execution/cpu_features.h"
#include "core/execution/half.h"

#if HVD_F16C_DISPATCH
#include <immintrin.h>
#endif

namespace hvd {
namespace elementwise {

// Types whose compute type differs from the storage (float16, bfloat16) are
// converted in blocks of this many elements into local float arrays: the
// block loops have a constant trip count and cannot alias, so they vectorize
// even under -O2's cost model (which refuses loops that need an alias check
// or a scalar remainder), and float16 blocks can use the F16C instructions.
constexpr std::size_t kBlock = 64;

// ---- float16 block conversions: F16C when the CPU has it ----
// F16C rounds to nearest even and quiets NaNs keeping the top payload bits,
// exactly as half.h does, so both paths give the same bits.

inline void half_load_generic(const std::uint16_t* src, float* dst) {
  for (std::size_t j = 0; j < kBlock; ++j) dst[j] = half_bits_to_float(src[j]);
}
inline void half_store_generic(const float* src, std::uint16_t* dst) {
  for (std::size_t j = 0; j < kBlock; ++j) dst[j] = float_to_half_bits(src[j]);
}

#if HVD_F16C_DISPATCH
__attribute__((target("avx,f16c"))) inline void half_load_f16c(const std::uint16_t* src,
                                                               float* dst) {
  for (std::size_t j = 0; j < kBlock; j += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j));
    _mm256_storeu_ps(dst + j, _mm256_cvtph_ps(h));
  }
}
__attribute__((target("avx,f16c"))) inline void half_store_f16c(const float* src,
                                                                std::uint16_t* dst) {
  for (std::size_t j = 0; j < kBlock; j += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + j), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), h);
  }
}
#endif

struct HalfBlockFns {
  void (*load)(const std::uint16_t*, float*);
  void (*store)(const float*, std::uint16_t*);
};
// The float16 block conversions this CPU runs (simd_dispatch.cc).
const HalfBlockFns& half_block_fns();

// ---- element access: the stored type and the type arithmetic happens in ----

template <typename T>
struct Plain {  // integers, float, double: computed in their own type
  using Raw = T;
  using Compute = T;
  static T load(T raw) { return raw; }
  static T store(T value) { return value; }
};
struct Half {  // float16: computed in float32, rounded once when stored
  using Raw = std::uint16_t;
  using Compute = float;
  static float load(Raw raw) { return half_bits_to_float(raw); }
  static Raw store(float value) { return float_to_half_bits(value); }
  static void load_block(const Raw* src, float* dst) { half_block_fns().load(src, dst); }
  static void store_block(const float* src, Raw* dst) { half_block_fns().store(src, dst); }
};
struct BFloat16 {
  using Raw = std::uint16_t;
  using Compute = float;
  static float load(Raw raw) { return bfloat16_bits_to_float(raw); }
  static Raw store(float value) { return float_to_bfloat16_bits(value); }
  static void load_block(const Raw* src, float* dst) {
    for (std::size_t j = 0; j < kBlock; ++j) dst[j] = load(src[j]);
  }
  static void store_block(const float* src, Raw* dst) {
    for (std::size_t j = 0; j < kBlock; ++j) dst[j] = store(src[j]);
  }
};
struct Bool {  // any non-zero byte is true; results are 0/1
  using Raw = std::uint8_t;
  using Compute = std::uint8_t;
  static std::uint8_t load(Raw raw) { return raw != 0; }
  static Raw store(std::uint8_t value) { return value; }
};
#if HVD_F16C_DISPATCH
// float16 with the F16C block conversions called directly, for the AVX2
// kernels (their target includes F16C, so these inline).
struct HalfF16c : Half {
  static void load_block(const Raw* src, float* dst) { half_load_f16c(src, dst); }
  static void store_block(const float* src, Raw* dst) { half_store_f16c(src, dst); }
};
#endif

// ---- the operations, on the compute type ----

// Unsigned type wide enough to hold T without promotion to int: uint16*uint16
// in `int` can overflow (UB); in uint32 it wraps as intended.
template <typename T>
using WideUnsigned = std::conditional_t<sizeof(T) <= 4, std::uint32_t, std::uint64_t>;

template <typename F>
using FloatBits = std::conditional_t<sizeof(F) == 4, std::uint32_t, std::uint64_t>;

template <typename F>
FloatBits<F> to_bits(F value) {
  FloatBits<F> bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
template <typename F>
F from_bits(FloatBits<F> bits) {
  F value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

struct SumOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return a + b;
    } else {  // two's complement wrap-around without signed overflow
      return static_cast<T>(static_cast<WideUnsigned<T>>(a) + static_cast<WideUnsigned<T>>(b));
    }
  }
};
struct ProductOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return a * b;
    } else {
      return static_cast<T>(static_cast<WideUnsigned<T>>(a) * static_cast<WideUnsigned<T>>(b));
    }
  }
};
// Floats: NaN propagates (a + b of a NaN is a quiet NaN), and -0 < +0 so the
// result does not depend on the operand order. Mask arithmetic on the bits
// keeps every float operation unconditional: the compiler does not if-convert
// a float operation under a branch (it could raise an FP exception), and the
// loop would not vectorize.
template <bool kMin, typename T>
T float_min_max(T a, T b) {
  using U = FloatBits<T>;
  const U ua = to_bits(a);
  const U ub = to_bits(b);
  const U take_b = U{0} - static_cast<U>(kMin ? b < a : a < b);
  const U equal = U{0} - static_cast<U>(a == b);
  const U unordered = U{0} - static_cast<U>((a != a) | (b != b));
  // Equal values have equal bits except for zeros: OR gives -0, AND gives +0.
  const U on_equal = kMin ? (ua | ub) : (ua & ub);
  U result = (ub & take_b) | (ua & ~take_b);
  result = (on_equal & equal) | (result & ~equal);
  result = (to_bits(a + b) & unordered) | (result & ~unordered);
  return from_bits<T>(result);
}

struct MinOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return float_min_max<true>(a, b);
    } else {
      return b < a ? b : a;
    }
  }
};
struct MaxOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return float_min_max<false>(a, b);
    } else {
      return a < b ? b : a;
    }
  }
};

}  // namespace elementwise
}  // namespace hvd
