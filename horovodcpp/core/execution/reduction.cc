#include "core/execution/reduction.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/check.h"
#include "core/execution/half.h"

// -DHVD_F16C_DISPATCH=0 builds the portable path only (to test it on x86).
#ifndef HVD_F16C_DISPATCH
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define HVD_F16C_DISPATCH 1
#else
#define HVD_F16C_DISPATCH 0
#endif
#endif
#if HVD_F16C_DISPATCH
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace hvd {
namespace {

// Types whose compute type differs from the storage (float16, bfloat16) are
// converted in blocks of this many elements into local float arrays: the
// block loops have a constant trip count and cannot alias, so they vectorize
// even under -O2's cost model (which refuses loops that need an alias check
// or a scalar remainder), and float16 blocks can use the F16C instructions.
constexpr std::size_t kBlock = 64;

// ---- float16 block conversions: F16C when the CPU has it ----
// F16C rounds to nearest even and quiets NaNs keeping the top payload bits,
// exactly as half.h does, so both paths give the same bits.

void half_load_generic(const std::uint16_t* src, float* dst) {
  for (std::size_t j = 0; j < kBlock; ++j) dst[j] = half_bits_to_float(src[j]);
}
void half_store_generic(const float* src, std::uint16_t* dst) {
  for (std::size_t j = 0; j < kBlock; ++j) dst[j] = float_to_half_bits(src[j]);
}

#if HVD_F16C_DISPATCH
__attribute__((target("avx,f16c"))) void half_load_f16c(const std::uint16_t* src, float* dst) {
  for (std::size_t j = 0; j < kBlock; j += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j));
    _mm256_storeu_ps(dst + j, _mm256_cvtph_ps(h));
  }
}
__attribute__((target("avx,f16c"))) void half_store_f16c(const float* src, std::uint16_t* dst) {
  for (std::size_t j = 0; j < kBlock; j += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + j), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), h);
  }
}
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const unsigned kOsXsave = 1u << 27, kAvx = 1u << 28, kF16c = 1u << 29;
  if ((ecx & (kOsXsave | kAvx | kF16c)) != (kOsXsave | kAvx | kF16c)) return false;
  unsigned xcr0_low = 0, xcr0_high = 0;  // VEX code needs the OS to save YMM state
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  return (xcr0_low & 6u) == 6u;
}
#endif

struct HalfBlockFns {
  void (*load)(const std::uint16_t*, float*);
  void (*store)(const float*, std::uint16_t*);
};
const HalfBlockFns& half_block_fns() {
  static const HalfBlockFns fns = [] {
#if HVD_F16C_DISPATCH
    if (cpu_has_f16c()) return HalfBlockFns{half_load_f16c, half_store_f16c};
#endif
    return HalfBlockFns{half_load_generic, half_store_generic};
  }();
  return fns;
}

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

// ---- reduce_into ----

template <typename Elem, typename Op>
void reduce_loop(void* inout, const void* in, std::size_t count) {
  using Raw = typename Elem::Raw;
  using Compute = typename Elem::Compute;
  Raw* a = static_cast<Raw*>(inout);
  const Raw* b = static_cast<const Raw*>(in);
  std::size_t i = 0;
  if constexpr (!std::is_same_v<Raw, Compute>) {
    for (; i + kBlock <= count; i += kBlock) {
      Compute x[kBlock], y[kBlock];
      Elem::load_block(a + i, x);
      Elem::load_block(b + i, y);
      for (std::size_t j = 0; j < kBlock; ++j) x[j] = Op::apply(x[j], y[j]);
      Elem::store_block(x, a + i);
    }
  }
  for (; i < count; ++i) a[i] = Elem::store(Op::apply(Elem::load(a[i]), Elem::load(b[i])));
}

template <typename Elem>
void reduce_elem(ReduceOp op, void* inout, const void* in, std::size_t count) {
  switch (op) {
    case ReduceOp::kSum: return reduce_loop<Elem, SumOp>(inout, in, count);
    case ReduceOp::kMin: return reduce_loop<Elem, MinOp>(inout, in, count);
    case ReduceOp::kMax: return reduce_loop<Elem, MaxOp>(inout, in, count);
    case ReduceOp::kProduct: return reduce_loop<Elem, ProductOp>(inout, in, count);
    case ReduceOp::kAverage:
      HVD_THROW(InvalidArgument, "reduce_into: Average is a Sum followed by scale_in_place");
    case ReduceOp::kAdasum: HVD_THROW(InvalidArgument, "reduce_into: Adasum is not element-wise");
  }
  HVD_THROW(InvalidArgument, "reduce_into: unknown ReduceOp " << static_cast<int>(op));
}

// bool is one byte, read as uint8_t (any non-zero byte is true), written 0/1.
void reduce_bool(ReduceOp op, void* inout, const void* in, std::size_t count) {
  auto* a = static_cast<std::uint8_t*>(inout);
  const auto* b = static_cast<const std::uint8_t*>(in);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMax:
      for (std::size_t i = 0; i < count; ++i) a[i] = (a[i] | b[i]) != 0;
      return;
    case ReduceOp::kMin:
    case ReduceOp::kProduct:
      for (std::size_t i = 0; i < count; ++i) a[i] = (a[i] != 0) & (b[i] != 0);
      return;
    case ReduceOp::kAverage:
      HVD_THROW(InvalidArgument, "reduce_into: Average is not defined for bool");
    case ReduceOp::kAdasum: HVD_THROW(InvalidArgument, "reduce_into: Adasum is not element-wise");
  }
  HVD_THROW(InvalidArgument, "reduce_into: unknown ReduceOp " << static_cast<int>(op));
}

// ---- reduce_many: n inputs folded into one output ----
// The output is reduced in place, kPass elements at a time: out = in0 op in1,
// then out = out op in_k for each further input. Each pass streams at most
// three arrays through L1 with plain loops that vectorize (twice as fast as
// accumulating every input into a local block first). Halves accumulate in
// a float32 array of the pass and are rounded once when it is stored.
constexpr std::size_t kPass = 1024;

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

// acc[j] = op(acc[j], src[j]) for j < m, through float blocks (halves).
template <typename Elem, typename Op>
[[gnu::always_inline]] inline void accumulate_pass(const typename Elem::Raw* src, float* acc,
                                                   std::size_t m) {
  std::size_t j = 0;
  for (; j + kBlock <= m; j += kBlock) {
    float x[kBlock];
    Elem::load_block(src + j, x);
    for (std::size_t t = 0; t < kBlock; ++t) acc[j + t] = Op::apply(acc[j + t], x[t]);
  }
  for (; j < m; ++j) acc[j] = Op::apply(acc[j], Elem::load(src[j]));
}

template <typename Elem, typename Op>
[[gnu::always_inline]] inline void many_kernel(void* dst, const void* const* srcs, std::size_t n,
                                               std::size_t count) {
  using Raw = typename Elem::Raw;
  using Compute = typename Elem::Compute;
  auto in = [srcs](std::size_t k, std::size_t i) { return static_cast<const Raw*>(srcs[k]) + i; };
  for (std::size_t i = 0; i < count; i += kPass) {
    const std::size_t m = std::min(kPass, count - i);
    Raw* out = static_cast<Raw*>(dst) + i;
    if constexpr (std::is_same_v<Raw, Compute>) {
      const Raw* a = in(0, i);
      if (n == 1) {
        for (std::size_t j = 0; j < m; ++j) out[j] = Elem::store(Elem::load(a[j]));
        continue;
      }
      const Raw* b = in(1, i);
      for (std::size_t j = 0; j < m; ++j) out[j] = Op::apply(Elem::load(a[j]), Elem::load(b[j]));
      for (std::size_t k = 2; k < n; ++k) {
        const Raw* x = in(k, i);
        for (std::size_t j = 0; j < m; ++j) out[j] = Op::apply(out[j], Elem::load(x[j]));
      }
    } else {
      Compute acc[kPass];
      const Raw* a = in(0, i);
      std::size_t j = 0;
      for (; j + kBlock <= m; j += kBlock) Elem::load_block(a + j, acc + j);
      for (; j < m; ++j) acc[j] = Elem::load(a[j]);
      for (std::size_t k = 1; k < n; ++k) accumulate_pass<Elem, Op>(in(k, i), acc, m);
      for (j = 0; j + kBlock <= m; j += kBlock) Elem::store_block(acc + j, out + j);
      for (; j < m; ++j) out[j] = Elem::store(acc[j]);
    }
  }
}

using ManyFn = void (*)(void*, const void* const*, std::size_t, std::size_t);

template <typename Elem, typename Op>
void many_portable(void* dst, const void* const* srcs, std::size_t n, std::size_t count) {
  many_kernel<Elem, Op>(dst, srcs, n, count);
}

#if HVD_F16C_DISPATCH
// The same kernel compiled for AVX2: twice the vector width of the x86-64
// baseline (SSE2) for the arithmetic on data that is already in cache.
template <typename Elem, typename Op>
__attribute__((target("avx2,f16c"))) void many_avx2(void* dst, const void* const* srcs,
                                                    std::size_t n, std::size_t count) {
  many_kernel<Elem, Op>(dst, srcs, n, count);
}

bool cpu_has_avx2() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!cpu_has_f16c()) return false;  // also checks that the OS saves YMM state
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (ebx & (1u << 5)) != 0;
}
#endif

// bool: Sum/Max are OR, Product/Min are AND: on 0/1 values, Max and Min.
template <typename Elem>
ManyFn many_fn(ReduceOp op, bool avx2) {
  (void)avx2;
#if HVD_F16C_DISPATCH
  using Fast = std::conditional_t<std::is_same_v<Elem, Half>, HalfF16c, Elem>;
#define HVD_MANY(OpType) (avx2 ? &many_avx2<Fast, OpType> : &many_portable<Elem, OpType>)
#else
#define HVD_MANY(OpType) (&many_portable<Elem, OpType>)
#endif
  constexpr bool kBool = std::is_same_v<Elem, Bool>;
  switch (op) {
    case ReduceOp::kSum: return kBool ? HVD_MANY(MaxOp) : HVD_MANY(SumOp);
    case ReduceOp::kMin: return HVD_MANY(MinOp);
    case ReduceOp::kMax: return HVD_MANY(MaxOp);
    case ReduceOp::kProduct: return kBool ? HVD_MANY(MinOp) : HVD_MANY(ProductOp);
    case ReduceOp::kAverage:
      HVD_THROW(InvalidArgument, "reduce_many: Average is a Sum followed by scale_in_place");
    case ReduceOp::kAdasum: HVD_THROW(InvalidArgument, "reduce_many: Adasum is not element-wise");
  }
#undef HVD_MANY
  HVD_THROW(InvalidArgument, "reduce_many: unknown ReduceOp " << static_cast<int>(op));
}

ManyFn pick_many(DataType dtype, ReduceOp op, bool avx2) {
  switch (dtype) {
    case DataType::kUInt8: return many_fn<Plain<std::uint8_t>>(op, avx2);
    case DataType::kInt8: return many_fn<Plain<std::int8_t>>(op, avx2);
    case DataType::kUInt16: return many_fn<Plain<std::uint16_t>>(op, avx2);
    case DataType::kInt16: return many_fn<Plain<std::int16_t>>(op, avx2);
    case DataType::kInt32: return many_fn<Plain<std::int32_t>>(op, avx2);
    case DataType::kInt64: return many_fn<Plain<std::int64_t>>(op, avx2);
    case DataType::kFloat16: return many_fn<Half>(op, avx2);
    case DataType::kBFloat16: return many_fn<BFloat16>(op, avx2);
    case DataType::kFloat32: return many_fn<Plain<float>>(op, avx2);
    case DataType::kFloat64: return many_fn<Plain<double>>(op, avx2);
    case DataType::kBool: return many_fn<Bool>(op, avx2);
  }
  HVD_THROW(InvalidArgument, "reduce_many: unknown DataType " << static_cast<int>(dtype));
}

// ---- scaling, as Horovod's ScaleBuffer ----

// x * factor in the compute type (float32 for float32 and the halves,
// rounded to the stored type once), in blocks for the halves.
template <typename Elem>
void scale_floating(const void* src, void* dst, std::size_t count, double factor) {
  using Raw = typename Elem::Raw;
  using Compute = typename Elem::Compute;
  const auto* in = static_cast<const Raw*>(src);
  auto* out = static_cast<Raw*>(dst);
  const Compute f = static_cast<Compute>(factor);
  std::size_t i = 0;
  if constexpr (!std::is_same_v<Raw, Compute>) {
    for (; i + kBlock <= count; i += kBlock) {
      Compute x[kBlock];
      Elem::load_block(in + i, x);
      for (std::size_t j = 0; j < kBlock; ++j) x[j] *= f;
      Elem::store_block(x, out + i);
    }
  }
  for (; i < count; ++i) out[i] = Elem::store(Elem::load(in[i]) * f);
}

// Truncates toward zero and clamps to T's range (NaN -> 0): out-of-range
// double -> integer casts are UB (Horovod's results there are the CPU's).
template <typename T>
T saturate_cast(double value) {
  constexpr double kLow = static_cast<double>(std::numeric_limits<T>::min());
  // For 64-bit T this rounds up to 2^63, so `>=` catches every overflow.
  constexpr double kHigh = static_cast<double>(std::numeric_limits<T>::max());
  if (!(value == value)) return 0;
  if (value <= kLow) return std::numeric_limits<T>::min();
  if (value >= kHigh) return std::numeric_limits<T>::max();
  return static_cast<T>(value);
}

// x * factor in double (int64 values beyond 2^53 round, as in Horovod).
template <typename T>
void scale_integer(const void* src, void* dst, std::size_t count, double factor) {
  const T* x = static_cast<const T*>(src);
  T* out = static_cast<T*>(dst);
  for (std::size_t i = 0; i < count; ++i)
    out[i] = saturate_cast<T>(static_cast<double>(x[i]) * factor);
}

void check_buffer(const void* pointer, std::size_t count, const char* what) {
  HVD_CHECK(pointer != nullptr || count == 0, InvalidArgument,
            what << ": null buffer for " << count << " elements");
}

void run_many(DataType dtype, ReduceOp op, void* dst, const void* const* srcs, std::size_t n,
              std::size_t count, bool avx2) {
  HVD_CHECK(n >= 1 && srcs != nullptr, InvalidArgument, "reduce_many: needs at least one input");
  const ManyFn fn = pick_many(dtype, op, avx2);  // validates dtype and op even for count 0
  check_buffer(dst, count, "reduce_many");
  for (std::size_t k = 0; k < n; ++k) check_buffer(srcs[k], count, "reduce_many");
  if (count > 0) fn(dst, srcs, n, count);
}

void check_divisor(double divisor, const char* what) {
  HVD_CHECK(std::isfinite(divisor) && divisor != 0.0, InvalidArgument,
            what << ": divisor must be finite and non-zero, got " << divisor);
}

void check_half_dtype(DataType dtype, const char* what) {
  HVD_CHECK(dtype == DataType::kFloat16 || dtype == DataType::kBFloat16, InvalidArgument,
            what << ": expected float16 or bfloat16, got " << static_cast<int>(dtype));
}

template <typename Elem>
void widen(const void* src, float* dst, std::size_t count, double factor) {
  const auto* x = static_cast<const typename Elem::Raw*>(src);
  if (factor == 1.0) {
    std::size_t i = 0;
    for (; i + kBlock <= count; i += kBlock) Elem::load_block(x + i, dst + i);
    for (; i < count; ++i) dst[i] = Elem::load(x[i]);
  } else {
    const float f = static_cast<float>(factor);
    for (std::size_t i = 0; i < count; ++i) dst[i] = Elem::load(Elem::store(Elem::load(x[i]) * f));
  }
}

template <typename Elem>
void narrow(const float* src, void* dst, std::size_t count, double factor) {
  auto* y = static_cast<typename Elem::Raw*>(dst);
  std::size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) Elem::store_block(src + i, y + i);
  for (; i < count; ++i) y[i] = Elem::store(src[i]);
  if (factor != 1.0) scale_floating<Elem>(y, y, count, factor);
}

}  // namespace

void reduce_into(DataType dtype, ReduceOp op, void* inout, const void* in, std::size_t count) {
  check_buffer(inout, count, "reduce_into");
  check_buffer(in, count, "reduce_into");
  switch (dtype) {
    case DataType::kUInt8: return reduce_elem<Plain<std::uint8_t>>(op, inout, in, count);
    case DataType::kInt8: return reduce_elem<Plain<std::int8_t>>(op, inout, in, count);
    case DataType::kUInt16: return reduce_elem<Plain<std::uint16_t>>(op, inout, in, count);
    case DataType::kInt16: return reduce_elem<Plain<std::int16_t>>(op, inout, in, count);
    case DataType::kInt32: return reduce_elem<Plain<std::int32_t>>(op, inout, in, count);
    case DataType::kInt64: return reduce_elem<Plain<std::int64_t>>(op, inout, in, count);
    case DataType::kFloat16: return reduce_elem<Half>(op, inout, in, count);
    case DataType::kBFloat16: return reduce_elem<BFloat16>(op, inout, in, count);
    case DataType::kFloat32: return reduce_elem<Plain<float>>(op, inout, in, count);
    case DataType::kFloat64: return reduce_elem<Plain<double>>(op, inout, in, count);
    case DataType::kBool: return reduce_bool(op, inout, in, count);
  }
  HVD_THROW(InvalidArgument, "reduce_into: unknown DataType " << static_cast<int>(dtype));
}

void reduce_many(DataType dtype, ReduceOp op, void* dst, const void* const* srcs, std::size_t n,
                 std::size_t count) {
#if HVD_F16C_DISPATCH
  static const bool avx2 = cpu_has_avx2();
#else
  constexpr bool avx2 = false;
#endif
  run_many(dtype, op, dst, srcs, n, count, avx2);
}

void detail::reduce_many_portable(DataType dtype, ReduceOp op, void* dst, const void* const* srcs,
                                  std::size_t n, std::size_t count) {
  run_many(dtype, op, dst, srcs, n, count, /*avx2=*/false);
}

void scale_copy(DataType dtype, const void* src, void* dst, std::size_t count, double divisor,
                double factor) {
  check_buffer(src, count, "scale_copy");
  check_buffer(dst, count, "scale_copy");
  check_divisor(divisor, "scale_copy");
  const std::size_t element_size = dtype_size(dtype);  // rejects an unknown dtype
  // One factor, as Horovod's `postscale_factor /= size` for Average.
  const double f = factor / divisor;
  if (dtype == DataType::kBool || f == 1.0) {
    if (src != dst && count > 0) std::memcpy(dst, src, count * element_size);
    return;
  }
  switch (dtype) {
    case DataType::kUInt8: return scale_integer<std::uint8_t>(src, dst, count, f);
    case DataType::kInt8: return scale_integer<std::int8_t>(src, dst, count, f);
    case DataType::kUInt16: return scale_integer<std::uint16_t>(src, dst, count, f);
    case DataType::kInt16: return scale_integer<std::int16_t>(src, dst, count, f);
    case DataType::kInt32: return scale_integer<std::int32_t>(src, dst, count, f);
    case DataType::kInt64: return scale_integer<std::int64_t>(src, dst, count, f);
    case DataType::kFloat16: return scale_floating<Half>(src, dst, count, f);
    case DataType::kBFloat16: return scale_floating<BFloat16>(src, dst, count, f);
    case DataType::kFloat32: return scale_floating<Plain<float>>(src, dst, count, f);
    case DataType::kFloat64: return scale_floating<Plain<double>>(src, dst, count, f);
    case DataType::kBool: return;
  }
}

void scale_in_place(DataType dtype, void* buffer, std::size_t count, double divisor,
                    double factor) {
  scale_copy(dtype, buffer, buffer, count, divisor, factor);
}

void widen_to_float32(DataType half_dtype, const void* src, float* dst, std::size_t count,
                      double factor) {
  check_half_dtype(half_dtype, "widen_to_float32");
  check_buffer(src, count, "widen_to_float32");
  check_buffer(dst, count, "widen_to_float32");
  if (half_dtype == DataType::kFloat16) {
    widen<Half>(src, dst, count, factor);
  } else {
    widen<BFloat16>(src, dst, count, factor);
  }
}

void narrow_from_float32(const float* src, DataType half_dtype, void* dst, std::size_t count,
                         double divisor, double factor) {
  check_half_dtype(half_dtype, "narrow_from_float32");
  check_buffer(src, count, "narrow_from_float32");
  check_buffer(dst, count, "narrow_from_float32");
  check_divisor(divisor, "narrow_from_float32");
  if (half_dtype == DataType::kFloat16) {
    narrow<Half>(src, dst, count, factor / divisor);
  } else {
    narrow<BFloat16>(src, dst, count, factor / divisor);
  }
}

}  // namespace hvd
