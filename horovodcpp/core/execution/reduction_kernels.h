// The element-wise loops behind reduction.h, as templates over the element
// type (element_types.h) and the operation. simd_dispatch.cc compiles the
// many-input kernel once per instruction set; reduction.cc the rest.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "core/execution/element_types.h"

namespace hvd {
namespace elementwise {

// ---- reduce_into: inout = inout op in ----
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

// ---- reduce_many: n inputs folded into one output ----
// The output is reduced in place, kPass elements at a time: out = in0 op in1,
// then out = out op in_k for each further input. Each pass streams at most
// three arrays through L1 with plain loops that vectorize (twice as fast as
// accumulating every input into a local block first). Halves accumulate in
// a float32 array of the pass and are rounded once when it is stored.
constexpr std::size_t kPass = 1024;

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

}  // namespace elementwise
}  // namespace hvd
