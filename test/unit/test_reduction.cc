// reduce_into, scale_in_place, widen_to_float32 and narrow_from_float32
// against scalar references: 128-bit integer arithmetic for the integers,
// double arithmetic rounded once for the floating types.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "core/execution/half.h"
#include "core/execution/reduction.h"
#include "double_to_half.h"
#include "horovodcpp/errors.h"
#include "horovodcpp/types.h"

namespace hvd {
namespace {

using test::double_to_bfloat16_bits;
using test::double_to_half_bits;

using Rng = std::mt19937_64;
using Int128 = __int128;
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

// ---- reference arithmetic ----

// v modulo 2^bits, as T (two's complement for signed T).
template <typename T>
T wrap(Int128 v) {
  using U = unsigned __int128;
  const U modulus = U{1} << (8 * sizeof(T));
  const U low = static_cast<U>(v) & (modulus - 1);
  if (std::is_signed_v<T> && low >= modulus / 2) {
    return static_cast<T>(static_cast<Int128>(low) - static_cast<Int128>(modulus));
  }
  return static_cast<T>(low);
}

// Min/Max: NaN if either is NaN; -0 below +0.
double ref_float_op(ReduceOp op, double a, double b) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (op) {
    case ReduceOp::kSum: return a + b;
    case ReduceOp::kProduct: return a * b;
    case ReduceOp::kMin:
      if (std::isnan(a) || std::isnan(b)) return nan;
      if (a == b) return std::signbit(a) ? a : b;
      return a < b ? a : b;
    case ReduceOp::kMax:
      if (std::isnan(a) || std::isnan(b)) return nan;
      if (a == b) return std::signbit(a) ? b : a;
      return a > b ? a : b;
    default: ADD_FAILURE() << "no reference for " << reduce_op_name(op); return nan;
  }
}

// ---- per-type traits: storage, test values, reference results ----

template <typename T>
struct IntTraits {
  using Store = T;
  static constexpr bool kFloating = false;
  static std::vector<T> edges() {
    using L = std::numeric_limits<T>;
    std::vector<T> v;
    if (sizeof(T) == 1) {  // every value: the pairs below are then exhaustive
      for (int i = 0; i < 256; ++i) v.push_back(static_cast<T>(i));
      return v;
    }
    v = {0,
         1,
         2,
         3,
         100,
         L::max(),
         L::min(),
         static_cast<T>(L::max() - 1),
         static_cast<T>(L::min() + 1),
         static_cast<T>(L::max() / 2 + 1)};
    if (std::is_signed_v<T>) v.insert(v.end(), {static_cast<T>(-1), static_cast<T>(-2)});
    return v;
  }
  static T random(Rng& rng) {
    if (rng() % 2) return static_cast<T>(rng());              // full range: wraps
    return static_cast<T>(static_cast<int>(rng() % 17) - 8);  // small
  }
  static T reduce(ReduceOp op, T a, T b) {
    switch (op) {
      case ReduceOp::kSum: return wrap<T>(static_cast<Int128>(a) + b);
      case ReduceOp::kProduct: return wrap<T>(static_cast<Int128>(a) * b);
      case ReduceOp::kMin: return a < b ? a : b;
      case ReduceOp::kMax: return a < b ? b : a;
      default: ADD_FAILURE(); return 0;
    }
  }
  // Horovod's ScaleBuffer: x * (factor / divisor) in double, truncated
  // (clamped to T's range); a factor of exactly 1 leaves x as it is.
  static T scale(T x, double divisor, double factor) {
    const double f = factor / divisor;
    if (f == 1.0) return x;
    const double r = std::trunc(static_cast<double>(x) * f);
    if (std::isnan(r)) return 0;
    const Int128 q = static_cast<Int128>(std::max(-0x1p100, std::min(0x1p100, r)));
    if (q < std::numeric_limits<T>::min()) return std::numeric_limits<T>::min();
    if (q > std::numeric_limits<T>::max()) return std::numeric_limits<T>::max();
    return static_cast<T>(q);
  }
  static bool same(T expected, T actual) { return expected == actual; }
  static std::string str(T v) { return std::to_string(+v); }
};

struct BoolTraits {
  using Store = std::uint8_t;  // bool elements are single bytes holding 0 or 1
  static constexpr bool kFloating = false;
  static std::vector<Store> edges() { return {0, 1}; }
  static Store random(Rng& rng) { return rng() % 2; }
  static Store reduce(ReduceOp op, Store a, Store b) {
    const bool sum_like = op == ReduceOp::kSum || op == ReduceOp::kMax;
    return sum_like ? (a || b) : (a && b);
  }
  static Store scale(Store x, double, double) { return x; }  // left unchanged
  static bool same(Store expected, Store actual) { return expected == actual; }
  static std::string str(Store v) { return std::to_string(v); }
};

// Floating types: values converted to double, reference computed in double
// and rounded once back. Sums and products of two float16/bfloat16/float32
// values are exact in double or double-rounding-safe (53 >= 2p + 2 bits), so
// the reference is the correctly rounded result.
template <typename S, typename Codec>
struct FloatTraits {
  using Store = S;
  static constexpr bool kFloating = true;
  static std::vector<S> edges() { return Codec::edges(); }
  static S random(Rng& rng) { return Codec::random(rng); }
  static S reduce(ReduceOp op, S a, S b) {
    return Codec::encode(ref_float_op(op, Codec::decode(a), Codec::decode(b)));
  }
  // Horovod's ScaleBuffer: x * (factor / divisor), in double for double, else
  // in float32 with the factor rounded to float32 (the product of two
  // float32 values is exact in double: casting it to float is the float32
  // multiplication), then rounded to S.
  static S scale(S x, double divisor, double factor) {
    const double f = factor / divisor;
    if (f == 1.0) return x;
    if constexpr (std::is_same_v<S, double>) {
      return x * f;
    } else {
      const float product =
          static_cast<float>(Codec::decode(x) * static_cast<double>(static_cast<float>(f)));
      return Codec::encode(product);
    }
  }
  static bool same(S expected, S actual) {
    if (std::isnan(Codec::decode(expected))) return std::isnan(Codec::decode(actual));
    return std::memcmp(&expected, &actual, sizeof(S)) == 0;  // tells -0 from +0
  }
  static std::string str(S v) {
    std::ostringstream os;
    os.precision(17);
    os << Codec::decode(v);
    return os.str();
  }
};

// Random floating values: half of them ordinary magnitudes whose sums mix
// and round, half spread over (and past) the whole exponent range.
double random_magnitude(Rng& rng, int min_exp, int max_exp) {
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  if (rng() % 2) return std::ldexp(unit(rng), static_cast<int>(rng() % 17) - 8);
  std::uniform_int_distribution<int> exponent(min_exp, max_exp);
  return std::ldexp(unit(rng), exponent(rng));
}

// float and double; a quarter of the values are arbitrary bit patterns (NaNs
// with payloads, infinities, subnormals).
template <typename F, typename Bits, int kMinExp, int kMaxExp>
struct IeeeCodec {
  static double decode(F v) { return v; }
  static F encode(double d) { return static_cast<F>(d); }
  static std::vector<F> edges() {
    using L = std::numeric_limits<F>;
    return {0,
            -F(0),
            1,
            -1,
            F(0.5),
            3,
            L::infinity(),
            -L::infinity(),
            L::quiet_NaN(),
            -L::quiet_NaN(),
            L::max(),
            L::lowest(),
            L::min(),
            L::denorm_min(),
            -L::denorm_min(),
            L::epsilon()};
  }
  static F random(Rng& rng) {
    if (rng() % 4 != 0) return static_cast<F>(random_magnitude(rng, kMinExp, kMaxExp));
    const auto bits = static_cast<Bits>(rng());
    F v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
};
using Float32Codec = IeeeCodec<float, std::uint32_t, -155, 130>;
using Float64Codec = IeeeCodec<double, std::uint64_t, -1080, 1026>;

// float16_t / bfloat16_t through the library's conversions (test_half.cc
// checks those against an independent reference).
template <typename S, float (*kDecode)(std::uint16_t), std::uint16_t (*kEncode)(double),
          std::uint16_t... kEdges>
struct HalfCodec {
  static S make(std::uint16_t bits) {
    S v;
    v.bits = bits;
    return v;
  }
  static double decode(S v) { return kDecode(v.bits); }
  static S encode(double d) { return make(kEncode(d)); }
  static std::vector<S> edges() { return {make(kEdges)...}; }
  static S random(Rng& rng) {
    if (rng() % 2) return make(static_cast<std::uint16_t>(rng()));  // any pattern
    return encode(random_magnitude(rng, -8, 8));
  }
};
using Float16Codec = HalfCodec<float16_t, half_bits_to_float, double_to_half_bits, 0x0000, 0x8000,
                               0x3c00, 0xbc00, 0x3c01, 0x1000, 0x7bff, 0xfbff, 0x0001, 0x8001,
                               0x03ff, 0x0400, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01>;
using BFloat16Codec = HalfCodec<bfloat16_t, bfloat16_bits_to_float, double_to_bfloat16_bits, 0x0000,
                                0x8000, 0x3f80, 0xbf80, 0x3f81, 0x3bc0, 0x7f7f, 0xff7f, 0x0001,
                                0x8001, 0x007f, 0x0080, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81>;

template <typename T>
struct Traits;
template <>
struct Traits<std::uint8_t> : IntTraits<std::uint8_t> {};
template <>
struct Traits<std::int8_t> : IntTraits<std::int8_t> {};
template <>
struct Traits<std::uint16_t> : IntTraits<std::uint16_t> {};
template <>
struct Traits<std::int16_t> : IntTraits<std::int16_t> {};
template <>
struct Traits<std::int32_t> : IntTraits<std::int32_t> {};
template <>
struct Traits<std::int64_t> : IntTraits<std::int64_t> {};
template <>
struct Traits<float16_t> : FloatTraits<float16_t, Float16Codec> {};
template <>
struct Traits<bfloat16_t> : FloatTraits<bfloat16_t, BFloat16Codec> {};
template <>
struct Traits<float> : FloatTraits<float, Float32Codec> {};
template <>
struct Traits<double> : FloatTraits<double, Float64Codec> {};
template <>
struct Traits<bool> : BoolTraits {};

// Every pair of edge values (all pairs for 8-bit types and bool), then random
// pairs; an odd count so vector loops run their scalar tails.
template <typename T>
void make_pairs(std::vector<typename Traits<T>::Store>* a,
                std::vector<typename Traits<T>::Store>* b) {
  const auto edges = Traits<T>::edges();
  for (const auto& x : edges) {
    for (const auto& y : edges) {
      a->push_back(x);
      b->push_back(y);
    }
  }
  Rng rng(static_cast<unsigned>(dtype_of<T>()) + 7);
  for (int i = 0; i < 20001; ++i) {
    a->push_back(Traits<T>::random(rng));
    b->push_back(Traits<T>::random(rng));
  }
}

// Compares out[i] with expected(i) for every i; reports the first few misses.
template <typename T, typename Expected>
void expect_all(const std::vector<typename Traits<T>::Store>& out, Expected expected,
                const std::vector<typename Traits<T>::Store>& a,
                const std::vector<typename Traits<T>::Store>& b) {
  std::size_t misses = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto want = expected(i);
    if (Traits<T>::same(want, out[i])) continue;
    if (++misses <= 5) {
      ADD_FAILURE() << "element " << i << ": a = " << Traits<T>::str(a[i])
                    << ", b = " << Traits<T>::str(b[i]) << ": expected " << Traits<T>::str(want)
                    << ", got " << Traits<T>::str(out[i]);
    }
  }
  EXPECT_EQ(misses, 0u) << "of " << out.size() << " elements";
}

template <typename T>
class KernelTest : public ::testing::Test {};
using AllTypes =
    ::testing::Types<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::int32_t,
                     std::int64_t, float16_t, bfloat16_t, float, double, bool>;
struct DtypeNames {
  template <typename T>
  static std::string GetName(int) {
    return dtype_name(dtype_of<T>());
  }
};
TYPED_TEST_SUITE(KernelTest, AllTypes, DtypeNames);

TYPED_TEST(KernelTest, ReduceIntoMatchesScalarReference) {
  using Tr = Traits<TypeParam>;
  std::vector<typename Tr::Store> a, b;
  make_pairs<TypeParam>(&a, &b);
  const std::size_t n = a.size();
  for (ReduceOp op : kOps) {
    SCOPED_TRACE(reduce_op_name(op));
    // Leave the first and last element out: the start is then misaligned for
    // vector loads and the kernel must not touch anything past `count`.
    auto out = a;
    reduce_into(dtype_of<TypeParam>(), op, out.data() + 1, b.data() + 1, n - 2);
    expect_all<TypeParam>(
        out,
        [&](std::size_t i) { return i == 0 || i == n - 1 ? a[i] : Tr::reduce(op, a[i], b[i]); }, a,
        b);
    // inout == in is allowed.
    out = a;
    reduce_into(dtype_of<TypeParam>(), op, out.data(), out.data(), n);
    expect_all<TypeParam>(
        out, [&](std::size_t i) { return Tr::reduce(op, a[i], a[i]); }, a, a);
  }
}

TYPED_TEST(KernelTest, ReduceIntoRejectsAverageAdasumAndUnknownOps) {
  typename Traits<TypeParam>::Store x[2] = {};
  const DataType dtype = dtype_of<TypeParam>();
  EXPECT_THROW(reduce_into(dtype, ReduceOp::kAverage, x, x + 1, 1), InvalidArgument);
  EXPECT_THROW(reduce_into(dtype, ReduceOp::kAdasum, x, x + 1, 1), InvalidArgument);
  EXPECT_THROW(reduce_into(dtype, static_cast<ReduceOp>(42), x, x + 1, 1), InvalidArgument);
  EXPECT_NO_THROW(reduce_into(dtype, ReduceOp::kSum, nullptr, nullptr, 0));
}

TYPED_TEST(KernelTest, ScaleInPlaceMatchesScalarReference) {
  using Tr = Traits<TypeParam>;
  std::vector<typename Tr::Store> a, unused;
  make_pairs<TypeParam>(&a, &unused);
  const std::pair<double, double> cases[] = {{1, 1},   {2, 1},   {3, 1},   {4, 1},   {7, 1},
                                             {3, 0.1}, {2, 0.5}, {1, 3},   {1, 2.5}, {2.5, 1},
                                             {0.5, 1}, {-2, 1},  {8, 1e30}};
  for (const auto& scaling : cases) {
    const double divisor = scaling.first, factor = scaling.second;  // lambdas capture these
    SCOPED_TRACE("divisor " + std::to_string(divisor) + ", factor " + std::to_string(factor));
    auto out = a;
    scale_in_place(dtype_of<TypeParam>(), out.data(), out.size(), divisor, factor);
    expect_all<TypeParam>(
        out, [&](std::size_t i) { return Tr::scale(a[i], divisor, factor); }, a, a);
  }
  typename Tr::Store x[1] = {};
  EXPECT_THROW(scale_in_place(dtype_of<TypeParam>(), x, 1, 0.0, 1.0), InvalidArgument);
  EXPECT_THROW(scale_in_place(dtype_of<TypeParam>(), x, 1, NAN, 1.0), InvalidArgument);
}

TYPED_TEST(KernelTest, DtypeDescribesTheElement) {
  const DataType dtype = dtype_of<TypeParam>();
  EXPECT_EQ(dtype_size(dtype), sizeof(typename Traits<TypeParam>::Store));
  EXPECT_EQ(is_floating(dtype), Traits<TypeParam>::kFloating);
}

// ---- explicit cases that name each rule ----

template <typename T>
std::vector<T> reduced(ReduceOp op, std::vector<T> a, const std::vector<T>& b) {
  reduce_into(dtype_of<T>(), op, a.data(), b.data(), a.size());
  return a;
}

TEST(ReduceInto, IntegersWrapAround) {
  using V8 = std::vector<std::int8_t>;
  EXPECT_EQ(reduced(ReduceOp::kSum, V8{127, -128, -1}, V8{1, -1, -128}), (V8{-128, 127, 127}));
  EXPECT_EQ(reduced(ReduceOp::kProduct, V8{-128, 16, 127}, V8{-1, 16, 127}), (V8{-128, 0, 1}));
  // uint16 * uint16 promotes to int and would overflow it: must still wrap.
  using VU16 = std::vector<std::uint16_t>;
  EXPECT_EQ(reduced(ReduceOp::kProduct, VU16{65535, 65535}, VU16{65535, 2}), (VU16{1, 65534}));
  using V32 = std::vector<std::int32_t>;
  EXPECT_EQ(reduced(ReduceOp::kSum, V32{INT32_MAX}, V32{1}), V32{INT32_MIN});
  using V64 = std::vector<std::int64_t>;
  EXPECT_EQ(reduced(ReduceOp::kProduct, V64{INT64_MAX}, V64{2}), V64{-2});
}

TEST(ReduceInto, BoolIsLogic) {
  const std::uint8_t b[4] = {0, 1, 0, 1};
  const std::vector<std::uint8_t> kOr = {0, 1, 1, 1}, kAnd = {0, 0, 0, 1};
  for (ReduceOp op : kOps) {
    std::vector<std::uint8_t> out = {0, 0, 1, 1};
    reduce_into(DataType::kBool, op, out.data(), b, out.size());
    const bool is_or = op == ReduceOp::kSum || op == ReduceOp::kMax;
    EXPECT_EQ(out, is_or ? kOr : kAnd) << reduce_op_name(op);
  }
}

TEST(ReduceInto, FloatMinMaxPropagateNaNAndOrderSignedZeros) {
  const float nan = std::nanf("");
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
    const auto out = reduced(op, std::vector<float>{nan, 1.0f, -INFINITY, nan},
                             std::vector<float>{1.0f, nan, nan, nan});
    for (float v : out) EXPECT_TRUE(std::isnan(v)) << reduce_op_name(op);
  }
  // Either operand order gives the same zero.
  const auto min = reduced(ReduceOp::kMin, std::vector<double>{-0.0, 0.0}, {0.0, -0.0});
  EXPECT_TRUE(std::signbit(min[0]) && std::signbit(min[1]));
  const auto max = reduced(ReduceOp::kMax, std::vector<double>{-0.0, 0.0}, {0.0, -0.0});
  EXPECT_TRUE(!std::signbit(max[0]) && !std::signbit(max[1]));
}

TEST(ReduceInto, HalfSumRoundsOncePerCall) {
  const auto h = Float16Codec::make;
  // 1 + 2^-11 is a tie: to even (1.0); 1+2^-10 + 2^-11 is a tie: to 1+2^-9.
  std::vector<float16_t> acc = {h(0x3c00), h(0x3c01)};
  const std::vector<float16_t> eps = {h(0x1000), h(0x1000)};  // 2^-11
  reduce_into(DataType::kFloat16, ReduceOp::kSum, acc.data(), eps.data(), 2);
  EXPECT_EQ(acc[0].bits, 0x3c00);
  EXPECT_EQ(acc[1].bits, 0x3c02);
  // Each call rounds: a second 2^-11 is lost again instead of accumulating.
  reduce_into(DataType::kFloat16, ReduceOp::kSum, acc.data(), eps.data(), 1);
  EXPECT_EQ(acc[0].bits, 0x3c00);
  // bfloat16: 1 + 1.5 * 2^-8 is above the tie: rounds up (truncation would not).
  bfloat16_t one = BFloat16Codec::make(0x3f80), b = BFloat16Codec::make(0x3bc0);
  reduce_into(DataType::kBFloat16, ReduceOp::kSum, &one, &b, 1);
  EXPECT_EQ(one.bits, 0x3f81);
}

// As Horovod's ScaleBuffer: one factor (factor / divisor, e.g. postscale /
// size for Average), applied in double and truncated.
TEST(ScaleInPlace, IntegersMultiplyInDoubleTruncateAndSaturate) {
  std::vector<std::int32_t> v = {7, -7, 1, -1, -6, INT32_MIN};
  scale_in_place(DataType::kInt32, v.data(), v.size(), 2, 1);
  EXPECT_EQ(v, (std::vector<std::int32_t>{3, -3, 0, 0, -3, INT32_MIN / 2}));
  v = {7, -7};  // 7 * (1.5 / 2) = 5.25 -> 5 (not (7 / 2) * 1.5 = 4)
  scale_in_place(DataType::kInt32, v.data(), v.size(), 2, 1.5);
  EXPECT_EQ(v, (std::vector<std::int32_t>{5, -5}));
  v = {49};  // 49 * (1.0 / 49) is 0.99999999999999989 in double: 0, as in Horovod
  scale_in_place(DataType::kInt32, v.data(), v.size(), 49, 1);
  EXPECT_EQ(v[0], 0);
  std::vector<std::int8_t> s = {-128, 100};
  scale_in_place(DataType::kInt8, s.data(), 1, -1, 1);
  scale_in_place(DataType::kInt8, s.data() + 1, 1, 0.5, 1);
  EXPECT_EQ(s, (std::vector<std::int8_t>{127, 127}));
  // int64 goes through double too: 2^63 - 1 becomes 2^63 first.
  std::vector<std::int64_t> w = {INT64_MAX, INT64_MIN, INT64_MIN};
  scale_in_place(DataType::kInt64, w.data(), 2, 3, 1);
  scale_in_place(DataType::kInt64, w.data() + 2, 1, -1, 1);
  EXPECT_EQ(w, (std::vector<std::int64_t>{3074457345618258432, -3074457345618258432, INT64_MAX}));
}

// float16 scales in float32, the factor rounded to float32 (Horovod's CPU
// ScaleBuffer): 0x3a03 * 7/3 gives 0x3f03 there, 0x3f04 in double.
TEST(ScaleInPlace, HalfScalesInFloat32) {
  float16_t x;
  x.bits = 0x3a03;
  scale_in_place(DataType::kFloat16, &x, 1, 3, 7);
  EXPECT_EQ(x.bits, 0x3f03);
  x.bits = 0x3c00;  // a factor of exactly 1 leaves the value alone
  scale_in_place(DataType::kFloat16, &x, 1, 3, 3);
  EXPECT_EQ(x.bits, 0x3c00);
  std::uint8_t flag = 1;
  scale_in_place(DataType::kBool, &flag, 1, 2, 0);
  EXPECT_EQ(flag, 1);
}

// ---- widen / narrow, per half format ----

struct HalfFormat {
  DataType dtype;
  float (*decode)(std::uint16_t);
  std::uint16_t (*encode)(double);
  int mant_bits;
  std::uint16_t quiet_bit;
  std::uint16_t one_bits;
};

class WidenNarrowTest : public ::testing::TestWithParam<HalfFormat> {};

bool same_float(float expected, float actual) {
  if (std::isnan(expected)) return std::isnan(actual);
  return std::memcmp(&expected, &actual, sizeof(float)) == 0;
}

TEST_P(WidenNarrowTest, EveryPatternRoundTrips) {
  const HalfFormat& f = GetParam();
  std::vector<std::uint16_t> all(65536), back(65536);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
  std::vector<float> wide(all.size());
  for (const double scale : {1.0, 2.0}) {
    widen_to_float32(f.dtype, all.data(), wide.data(), all.size(), scale);
    narrow_from_float32(wide.data(), f.dtype, back.data(), all.size(), scale, 1.0);
    for (std::size_t i = 0; i < all.size(); ++i) {
      const float value = f.decode(all[i]);
      const float scaled = f.decode(f.encode(value * scale));  // rounded to the format
      ASSERT_TRUE(same_float(scaled, wide[i])) << i;
      if (std::isinf(scaled) && !std::isinf(value)) continue;  // value * 2 overflows the format
      if (std::isnan(value) && scale != 1.0) {  // arithmetic may change a NaN's payload
        ASSERT_TRUE(std::isnan(f.decode(back[i]))) << i;
        continue;
      }
      const std::uint16_t want = std::isnan(value) ? (all[i] | f.quiet_bit) : all[i];
      ASSERT_EQ(back[i], want) << "pattern " << i << ", scale " << scale;
    }
  }
}

TEST_P(WidenNarrowTest, ScaledValuesMatchReference) {
  const HalfFormat& f = GetParam();
  Rng rng(5);
  std::vector<std::uint16_t> half(30001), narrowed(half.size());
  std::vector<float> wide(half.size()), src(half.size());
  for (auto& h : half) h = static_cast<std::uint16_t>(rng());
  for (auto& s : src) s = static_cast<float>(random_magnitude(rng, -140, 130));
  widen_to_float32(f.dtype, half.data(), wide.data(), half.size(), 0.1);
  narrow_from_float32(src.data(), f.dtype, narrowed.data(), src.size(), 3, 0.7);
  // x * factor in float32 (exact in double, then rounded to float), rounded
  // to the format: Horovod's ScaleBuffer.
  auto scaled = [&](double x, double factor) {
    return f.encode(static_cast<float>(x * static_cast<double>(static_cast<float>(factor))));
  };
  for (std::size_t i = 0; i < half.size(); ++i) {
    ASSERT_TRUE(same_float(f.decode(scaled(f.decode(half[i]), 0.1)), wide[i])) << i;
    ASSERT_EQ(narrowed[i], scaled(f.decode(f.encode(src[i])), 0.7 / 3)) << src[i];
  }
}

// The float32 result is rounded to the format before the scaling (as
// Horovod scales the reduced buffer): 1 + half an ulp rounds to 1 (ties to
// even), which times 1 + 2^-20 rounds to 1 again; scaled first, it would
// round up.
TEST_P(WidenNarrowTest, NarrowRoundsBeforeScaling) {
  const HalfFormat& f = GetParam();
  const float tie = 1.0f + std::ldexp(1.0f, -f.mant_bits - 1);
  std::uint16_t out = 0;
  narrow_from_float32(&tie, f.dtype, &out, 1, 1.0, 1.0 + std::ldexp(1.0, -20));
  EXPECT_EQ(out, f.one_bits);
}

TEST_P(WidenNarrowTest, RejectsBadArguments) {
  const HalfFormat& f = GetParam();
  std::uint16_t h = 0;
  float x = 0;
  EXPECT_THROW(widen_to_float32(DataType::kFloat32, &h, &x, 1, 1.0), InvalidArgument);
  EXPECT_THROW(narrow_from_float32(&x, DataType::kInt16, &h, 1, 1.0, 1.0), InvalidArgument);
  EXPECT_THROW(narrow_from_float32(&x, f.dtype, &h, 1, 0.0, 1.0), InvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Formats, WidenNarrowTest,
                         ::testing::Values(HalfFormat{DataType::kFloat16, half_bits_to_float,
                                                      double_to_half_bits, 10, 0x0200, 0x3c00},
                                           HalfFormat{DataType::kBFloat16, bfloat16_bits_to_float,
                                                      double_to_bfloat16_bits, 7, 0x0040, 0x3f80}),
                         [](const ::testing::TestParamInfo<HalfFormat>& info) {
                           return std::string(dtype_name(info.param.dtype));
                         });

}  // namespace
}  // namespace hvd

namespace hvd {
namespace {

// scale_copy out of place gives what scale_in_place gives, and leaves its
// source alone, for every dtype.
TEST(ScaleCopyTest, OutOfPlaceMatchesInPlaceAndKeepsSource) {
  for (int d = 0; d < kNumDataTypes; ++d) {
    const DataType dtype = static_cast<DataType>(d);
    const std::size_t count = 37, bytes = count * dtype_size(dtype);
    std::vector<unsigned char> src(bytes);
    for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(i * 7 % 5);
    if (dtype == DataType::kBool) {
      for (auto& b : src) b = b % 2;
    }
    for (auto [divisor, factor] : {std::pair{1.0, 1.0}, {3.0, 1.0}, {2.0, 0.5}, {1.0, -4.0}}) {
      const std::vector<unsigned char> original = src;
      std::vector<unsigned char> expected = src, out(bytes, 0xAB);
      scale_in_place(dtype, expected.data(), count, divisor, factor);
      scale_copy(dtype, src.data(), out.data(), count, divisor, factor);
      EXPECT_EQ(out, expected) << dtype_name(dtype) << " /" << divisor << " *" << factor;
      EXPECT_EQ(src, original) << dtype_name(dtype);
    }
  }
}

// ---- reduce_many: n inputs in one pass ----

constexpr DataType kManyDtypes[] = {DataType::kUInt8,   DataType::kInt8,     DataType::kUInt16,
                                    DataType::kInt16,   DataType::kInt32,    DataType::kInt64,
                                    DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                    DataType::kFloat64, DataType::kBool};

bool is_half_dtype(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
}

// The left fold of reduce_into over `inputs`; float16/bfloat16 folded in
// float32 and rounded once; bool results 0/1.
std::vector<unsigned char> fold_reference(DataType dtype, ReduceOp op,
                                          const std::vector<std::vector<unsigned char>>& inputs,
                                          std::size_t count) {
  if (is_half_dtype(dtype)) {
    std::vector<float> acc(count), x(count);
    widen_to_float32(dtype, inputs[0].data(), acc.data(), count, 1.0);
    for (std::size_t k = 1; k < inputs.size(); ++k) {
      widen_to_float32(dtype, inputs[k].data(), x.data(), count, 1.0);
      reduce_into(DataType::kFloat32, op, acc.data(), x.data(), count);
    }
    std::vector<unsigned char> out(count * 2);
    narrow_from_float32(acc.data(), dtype, out.data(), count, 1.0, 1.0);
    return out;
  }
  std::vector<unsigned char> acc = inputs[0];
  if (dtype == DataType::kBool) {
    for (unsigned char& b : acc) b = b != 0;
  }
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    reduce_into(dtype, op, acc.data(), inputs[k].data(), count);
  }
  return acc;
}

// Equal bits, except that any NaN matches any NaN (the payload a NaN sum
// keeps depends on the operand order the compiler picks).
::testing::AssertionResult same_elements(DataType dtype, const std::vector<unsigned char>& a,
                                         const std::vector<unsigned char>& b) {
  const std::size_t size = dtype_size(dtype);
  for (std::size_t i = 0; i * size < a.size(); ++i) {
    if (std::memcmp(&a[i * size], &b[i * size], size) == 0) continue;
    bool both_nan = false;
    if (dtype == DataType::kFloat32) {
      float x, y;
      std::memcpy(&x, &a[i * size], 4);
      std::memcpy(&y, &b[i * size], 4);
      both_nan = std::isnan(x) && std::isnan(y);
    } else if (dtype == DataType::kFloat64) {
      double x, y;
      std::memcpy(&x, &a[i * size], 8);
      std::memcpy(&y, &b[i * size], 8);
      both_nan = std::isnan(x) && std::isnan(y);
    } else if (is_half_dtype(dtype)) {
      std::uint16_t x, y;
      std::memcpy(&x, &a[i * size], 2);
      std::memcpy(&y, &b[i * size], 2);
      const std::uint16_t exp = dtype == DataType::kFloat16 ? 0x7c00 : 0x7f80;
      both_nan = (x & 0x7fff) > exp && (y & 0x7fff) > exp;
    }
    if (!both_nan) return ::testing::AssertionFailure() << "element " << i << " differs";
  }
  return ::testing::AssertionSuccess();
}

TEST(ReduceMany, MatchesFoldAndPortablePathInAndOutOfPlace) {
  Rng rng(7);
  for (DataType dtype : kManyDtypes) {
    for (ReduceOp op : kOps) {
      for (std::size_t n : {1, 2, 3, 4, 5}) {
        for (std::size_t count : {0, 1, 63, 64, 65, 300, 1024, 2500}) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + reduce_op_name(op) +
                       " n=" + std::to_string(n) + " count=" + std::to_string(count));
          const std::size_t bytes = count * dtype_size(dtype);
          std::vector<std::vector<unsigned char>> inputs(n, std::vector<unsigned char>(bytes));
          for (auto& input : inputs) {
            for (unsigned char& b : input) b = static_cast<unsigned char>(rng());
          }
          const std::vector<unsigned char> expected = fold_reference(dtype, op, inputs, count);
          std::vector<const void*> srcs;
          for (const auto& input : inputs) srcs.push_back(input.data());
          std::vector<unsigned char> out(bytes, 0xAB), portable(bytes, 0xCD);
          reduce_many(dtype, op, out.data(), srcs.data(), n, count);
          detail::reduce_many_portable(dtype, op, portable.data(), srcs.data(), n, count);
          EXPECT_TRUE(same_elements(dtype, out, expected));
          EXPECT_TRUE(same_elements(dtype, portable, expected));
          // In place: the output is the first input.
          std::vector<std::vector<unsigned char>> copy = inputs;
          srcs.front() = copy.front().data();
          reduce_many(dtype, op, copy.front().data(), srcs.data(), n, count);
          EXPECT_TRUE(same_elements(dtype, copy.front(), expected));
        }
      }
    }
  }
}

TEST(ReduceMany, HalfSumRoundsOnceOverAllInputs) {
  const auto h = Float16Codec::make;
  // 1 + 2^-11 + 2^-11: one rounding gives 1 + 2^-10; reduce_into twice gives 1.
  const float16_t one = h(0x3c00), eps = h(0x1000);
  const void* srcs[] = {&one, &eps, &eps};
  float16_t out = h(0);
  reduce_many(DataType::kFloat16, ReduceOp::kSum, &out, srcs, 3, 1);
  EXPECT_EQ(out.bits, 0x3c01);
}

TEST(ReduceMany, RejectsAverageAndMissingInputs) {
  float x = 1;
  const void* srcs[] = {&x};
  EXPECT_THROW(reduce_many(DataType::kFloat32, ReduceOp::kAverage, &x, srcs, 1, 1),
               InvalidArgument);
  EXPECT_THROW(reduce_many(DataType::kFloat32, ReduceOp::kSum, &x, srcs, 0, 1), InvalidArgument);
}

}  // namespace
}  // namespace hvd
