// float16 / bfloat16 conversions against a slow reference written from the
// format definitions with double arithmetic (ldexp/frexp), independent of the
// bit tricks in core/half.h.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "core/execution/half.h"
#include "double_to_half.h"
#include "horovodcpp/errors.h"
#include "horovodcpp/types.h"

namespace hvd {
namespace {

using test::double_to_bfloat16_bits;
using test::double_to_half_bits;

std::uint32_t bits_of(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
float float_of(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

struct Format {
  const char* name;
  int mant_bits;  // stored mantissa bits
  int emax;       // exponent of the largest binade; also the bias
  std::uint16_t (*from_float)(float);
  float (*to_float)(std::uint16_t);
  std::uint16_t (*from_double)(double);

  int emin() const { return 1 - emax; }
  std::uint16_t exp_mask() const { return static_cast<std::uint16_t>(0x7fff & ~mant_mask()); }
  std::uint16_t mant_mask() const { return static_cast<std::uint16_t>((1u << mant_bits) - 1); }
  std::uint16_t quiet_bit() const { return static_cast<std::uint16_t>(1u << (mant_bits - 1)); }
  std::uint16_t inf_bits() const { return exp_mask(); }
  bool is_nan(std::uint16_t bits) const {
    return (bits & exp_mask()) == exp_mask() && (bits & mant_mask()) != 0;
  }
  double max_finite() const { return std::ldexp(2.0 - std::ldexp(1.0, -mant_bits), emax); }
};

const Format kHalf{"float16", 10, 15, float_to_half_bits, half_bits_to_float, double_to_half_bits};
const Format kBFloat16{
    "bfloat16", 7, 127, float_to_bfloat16_bits, bfloat16_bits_to_float, double_to_bfloat16_bits};

// The value a bit pattern encodes, from the definition of the format.
double ref_decode(const Format& f, std::uint16_t bits) {
  const bool negative = (bits & 0x8000) != 0;
  const int exp_field = (bits & f.exp_mask()) >> f.mant_bits;
  const int mant = bits & f.mant_mask();
  double value;
  if ((bits & f.exp_mask()) == f.exp_mask()) {
    value = mant == 0 ? std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::quiet_NaN();
  } else if (exp_field == 0) {
    value = std::ldexp(mant, f.emin() - f.mant_bits);
  } else {
    value = std::ldexp(mant + (1 << f.mant_bits), exp_field - f.emax - f.mant_bits);
  }
  return negative ? -value : value;
}

// x rounded to the format, to nearest even, as a double (inf on overflow).
double ref_round(const Format& f, double x) {
  if (std::isnan(x) || std::isinf(x)) return x;
  const double magnitude = std::fabs(x);
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude in [2^(exponent-1), 2^exponent)
  const int leading = std::max(exponent - 1, f.emin());  // subnormals: fixed ulp
  const double ulp = std::ldexp(1.0, leading - f.mant_bits);
  const double units = magnitude / ulp;  // exact: scaling by a power of two
  const double floor_units = std::floor(units);
  const double rest = units - floor_units;
  double rounded = floor_units;
  if (rest > 0.5 || (rest == 0.5 && std::fmod(floor_units, 2.0) != 0.0)) rounded += 1.0;
  double value = rounded * ulp;
  // Overflow: anything that rounds above the largest finite value.
  if (value > f.max_finite()) value = std::numeric_limits<double>::infinity();
  return std::copysign(value, x);
}

// Same value, same sign (so -0 != +0); any NaN equals any NaN.
::testing::AssertionResult SameValue(double expected, double actual) {
  if (std::isnan(expected) && std::isnan(actual)) return ::testing::AssertionSuccess();
  if (expected == actual && std::signbit(expected) == std::signbit(actual))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected " << expected << ", got " << actual;
}

class HalfFormatTest : public ::testing::TestWithParam<Format> {};

TEST_P(HalfFormatTest, DecodesEveryPatternLikeTheReference) {
  const Format& f = GetParam();
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float value = f.to_float(bits);
    ASSERT_TRUE(SameValue(ref_decode(f, bits), value)) << "pattern 0x" << std::hex << b;
    if (f.is_nan(bits)) {
      ASSERT_TRUE(bits_of(value) & 0x00400000u) << "NaN not quiet: 0x" << std::hex << b;
      ASSERT_EQ(std::signbit(value), (bits & 0x8000) != 0) << "NaN sign: 0x" << std::hex << b;
    }
  }
}

TEST_P(HalfFormatTest, EveryPatternRoundTripsThroughFloat) {
  const Format& f = GetParam();
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const std::uint16_t back = f.from_float(f.to_float(bits));
    if (f.is_nan(bits)) {
      // Signalling NaNs come back quiet; quiet ones come back unchanged.
      ASSERT_EQ(back, bits | f.quiet_bit()) << "pattern 0x" << std::hex << b;
    } else {
      ASSERT_EQ(back, bits) << "pattern 0x" << std::hex << b;
    }
  }
}

// Midpoints between neighbours (ties), and the floats just either side.
TEST_P(HalfFormatTest, RoundsTiesToEvenAndNeighboursToNearest) {
  const Format& f = GetParam();
  const std::uint16_t max_bits = static_cast<std::uint16_t>(f.inf_bits() - 1);
  for (std::uint16_t b = 0; b <= max_bits; ++b) {
    const double lo = ref_decode(f, b);
    // Above the largest finite value the "next" value is 2^(emax+1).
    const double hi = b == max_bits ? std::ldexp(1.0, f.emax + 1) : ref_decode(f, b + 1);
    const float mid = static_cast<float>((lo + hi) / 2);  // exact: 2 more bits than f
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    const std::uint16_t even = (b & 1) ? static_cast<std::uint16_t>(b + 1) : b;
    for (float sign : {1.0f, -1.0f}) {
      const std::uint16_t sign_bit = sign < 0 ? 0x8000 : 0;
      ASSERT_EQ(f.from_float(sign * mid), even | sign_bit) << "tie above 0x" << std::hex << b;
      ASSERT_EQ(f.from_float(sign * std::nextafter(mid, 0.0f)), b | sign_bit)
          << "below tie above 0x" << std::hex << b;
      ASSERT_EQ(f.from_float(sign * std::nextafter(mid, FLT_MAX)), (b + 1) | sign_bit)
          << "above tie above 0x" << std::hex << b;
    }
  }
}

TEST_P(HalfFormatTest, EncodesRandomFloatsLikeTheReference) {
  const Format& f = GetParam();
  std::mt19937_64 rng(1234);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  // Exponents from below the smallest subnormal to past overflow.
  std::uniform_int_distribution<int> exponent(f.emin() - f.mant_bits - 3, f.emax + 2);
  for (int i = 0; i < (1 << 21); ++i) {
    // Half all bit patterns (NaN, inf, huge, float subnormals), half in range.
    const float x = (i & 1) ? float_of(static_cast<std::uint32_t>(rng()))
                            : static_cast<float>(std::ldexp(unit(rng), exponent(rng)));
    const std::uint16_t bits = f.from_float(x);
    ASSERT_TRUE(SameValue(ref_round(f, x), ref_decode(f, bits)))
        << "x = " << x << " (0x" << std::hex << bits_of(x) << ")";
    if (std::isnan(x)) {
      ASSERT_TRUE(bits & f.quiet_bit()) << "NaN not quiet";
    }
  }
}

// double -> half must round once: rounding to float first would turn a value
// just above a tie into the tie and round it to even.
TEST_P(HalfFormatTest, EncodesDoublesWithOneRounding) {
  const Format& f = GetParam();
  const double tie = 1.0 + std::ldexp(1.0, -f.mant_bits - 1);  // between 1 and 1 + ulp
  const auto one = f.from_float(1.0f);
  EXPECT_EQ(f.from_double(tie), one);
  EXPECT_EQ(f.from_double(tie + std::ldexp(1.0, -40)), one + 1);
  EXPECT_EQ(f.from_double(-(tie + std::ldexp(1.0, -40))), (one + 1) | 0x8000);
  EXPECT_EQ(f.from_double(tie - std::ldexp(1.0, -40)), one);
  EXPECT_EQ(f.from_double(1e300), f.inf_bits());
  EXPECT_EQ(f.from_double(-1e300), f.inf_bits() | 0x8000);
  EXPECT_EQ(f.from_double(1e-300), 0);
  EXPECT_EQ(f.from_double(-1e-300), 0x8000);
  EXPECT_TRUE(f.is_nan(f.from_double(std::nan(""))));

  std::mt19937_64 rng(99);
  std::uniform_int_distribution<int> pattern(0, f.inf_bits() - 2);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(f.emin() - f.mant_bits - 3, f.emax + 2);
  for (int i = 0; i < (1 << 20); ++i) {
    double x;
    if (i & 1) {  // a tie nudged by far less than a float ulp
      const auto b = static_cast<std::uint16_t>(pattern(rng));
      const double mid = (ref_decode(f, b) + ref_decode(f, b + 1)) / 2;
      x = mid + mid * std::ldexp(unit(rng), -40);
    } else {
      x = std::ldexp(unit(rng), exponent(rng));
    }
    ASSERT_TRUE(SameValue(ref_round(f, x), ref_decode(f, f.from_double(x)))) << "x = " << x;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, HalfFormatTest, ::testing::Values(kHalf, kBFloat16),
                         [](const ::testing::TestParamInfo<Format>& info) {
                           return std::string(info.param.name);
                         });

TEST(Float16, KnownValues) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);    // largest finite
  EXPECT_EQ(float_to_half_bits(65519.996f), 0x7bff);  // just below the tie
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);    // tie: rounds to "even" inf
  EXPECT_EQ(float_to_half_bits(1e10f), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-FLT_MAX), 0xfc00);
  EXPECT_EQ(float_to_half_bits(INFINITY), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-INFINITY), 0xfc00);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie to even 0
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_half_bits(std::ldexp(3.0f, -25)), 0x0002);         // tie to even 2
  EXPECT_EQ(float_to_half_bits(std::ldexp(2047.0f, -25)), 0x0400);      // tie into normals
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -14)), 0x0400);         // smallest normal
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie to even
  EXPECT_EQ(float_to_half_bits(2049.0f), 0x6800);
  EXPECT_EQ(float_to_half_bits(2051.0f), 0x6802);
  EXPECT_EQ(float_to_half_bits(float_of(0x00000001u)), 0x0000);  // float subnormal
  EXPECT_EQ(float_to_half_bits(float_of(0x80000001u)), 0x8000);
  EXPECT_EQ(float_to_half_bits(float_of(0x7f800001u)), 0x7e00);  // signalling -> quiet
  EXPECT_EQ(float_to_half_bits(float_of(0xffc00000u)), 0xfe00);
  EXPECT_EQ(float_to_half_bits(float_of(0x7fffe000u)), 0x7fff);  // payload kept
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_bits_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(bits_of(half_bits_to_float(0x7c01)), 0x7fc02000u);  // quieted, payload kept
}

TEST(BFloat16, KnownValues) {
  EXPECT_EQ(float_to_bfloat16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bfloat16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie to even
  EXPECT_EQ(float_to_bfloat16_bits(1.0f + std::ldexp(3.0f, -8)), 0x3f82);  // tie to even
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x3f808001u)), 0x3f81);        // above the tie
  EXPECT_EQ(float_to_bfloat16_bits(FLT_MAX), 0x7f80);                      // overflow
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x7f7f7fffu)), 0x7f7f);        // below the tie
  EXPECT_EQ(float_to_bfloat16_bits(-INFINITY), 0xff80);
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x00008000u)), 0x0000);  // subnormal tie, even
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x00018000u)), 0x0002);  // subnormal tie, even
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x00008001u)), 0x0001);
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x7f800001u)), 0x7fc0);  // NaN stays NaN
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0xff81ffffu)), 0xffc1);  // sign, payload
  EXPECT_EQ(bits_of(bfloat16_bits_to_float(0x7f81)), 0x7fc10000u);
}

TEST(HalfTypes, WrappersConvertThroughFloat) {
  EXPECT_EQ(float16_t(1.5f).bits, 0x3e00);
  EXPECT_EQ(bfloat16_t(1.5f).bits, 0x3fc0);
  EXPECT_EQ(static_cast<float>(float16_t(-0.1f)), half_bits_to_float(0xae66));
  EXPECT_EQ(static_cast<float>(bfloat16_t(3.0f)), 3.0f);
  EXPECT_EQ(float16_t().bits, 0);
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16_t(std::nanf("")))));
}

TEST(Types, NamesAndErrors) {
  const char* const dtypes[kNumDataTypes] = {"uint8",   "int8",    "uint16",  "int16",
                                             "int32",   "int64",   "float16", "bfloat16",
                                             "float32", "float64", "bool"};
  for (int i = 0; i < kNumDataTypes; ++i) {
    EXPECT_STREQ(dtype_name(static_cast<DataType>(i)), dtypes[i]);
  }
  const char* const ops[] = {"Sum", "Average", "Min", "Max", "Product"};
  for (int i = 0; i < 5; ++i) EXPECT_STREQ(reduce_op_name(static_cast<ReduceOp>(i)), ops[i]);
  EXPECT_EQ(Device::cpu().str(), "cpu");
  EXPECT_EQ(Device::cuda(1).str(), "cuda:1");
  EXPECT_THROW(dtype_name(static_cast<DataType>(kNumDataTypes)), InvalidArgument);
  EXPECT_THROW(dtype_size(static_cast<DataType>(200)), InvalidArgument);
  EXPECT_THROW(reduce_op_name(static_cast<ReduceOp>(9)), InvalidArgument);
}

}  // namespace
}  // namespace hvd
