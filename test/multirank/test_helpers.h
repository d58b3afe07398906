// Shared helpers of the multi-process suites (collective_tests and
// negotiation_tests): typed buffers for every dtype, deterministic
// rank-dependent input values, and scalar references of the reductions
// computed from every rank's inputs.
//
// Every rank can regenerate every other rank's input (values are a pure
// function of a per-tensor salt, the rank and the element index), so the
// reference of a collective needs no communication.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "horovodcpp/horovodcpp.h"

namespace hvdtest {

using hvd::DataType;
using hvd::ReduceOp;

// ---- Enumerations ---------------------------------------------------------

inline std::vector<DataType> all_dtypes() {
  std::vector<DataType> dtypes;
  for (int i = 0; i < hvd::kNumDataTypes; ++i) dtypes.push_back(static_cast<DataType>(i));
  return dtypes;
}

inline std::vector<ReduceOp> all_ops() {
  return {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};
}

// ---- Element types --------------------------------------------------------

template <typename T>
constexpr bool is_half_v = std::is_same_v<T, hvd::float16_t> || std::is_same_v<T, hvd::bfloat16_t>;
template <typename T>
constexpr bool is_bool_v = std::is_same_v<T, bool>;
template <typename T>
constexpr bool is_float_v = is_half_v<T> || std::is_floating_point_v<T>;
template <typename T>
constexpr bool is_int_v = std::is_integral_v<T> && !is_bool_v<T>;

// How an element is stored: bool as one byte holding 0 or 1 (read through
// uint8_t so that a byte other than 0/1 is reported, not undefined).
template <typename T>
using Store = std::conditional_t<is_bool_v<T>, std::uint8_t, T>;

// The tests' own 16-bit float codecs (independent of the library's, and
// inline: the references decode billions of elements).
inline float float_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline std::uint32_t bits_of_float(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}
inline float decode_half(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    const float v = static_cast<float>(man) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31) return float_from_bits(sign | 0x7f800000u | (man << 13));
  return float_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}
// `v` must be exactly representable as a float16 (finite).
inline std::uint16_t encode_half_exact(float v) {
  const std::uint32_t f = bits_of_float(v);
  const std::uint16_t sign = static_cast<std::uint16_t>((f >> 16) & 0x8000u);
  const int exp = static_cast<int>((f >> 23) & 0xffu) - 112;
  if (exp >= 1) {
    return static_cast<std::uint16_t>(sign | (exp << 10) | ((f & 0x7fffffu) >> 13));
  }
  const float magnitude = std::fabs(v) * 16777216.0f;  // subnormal: an integer
  return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(magnitude));
}

template <typename T>
double to_double(Store<T> v) {
  if constexpr (std::is_same_v<T, hvd::float16_t>) {
    return decode_half(v.bits);
  } else if constexpr (std::is_same_v<T, hvd::bfloat16_t>) {
    return float_from_bits(static_cast<std::uint32_t>(v.bits) << 16);
  } else {
    return static_cast<double>(v);
  }
}

// `v` must be exactly representable in T.
template <typename T>
Store<T> from_double(double v) {
  if constexpr (std::is_same_v<T, hvd::float16_t>) {
    T out;
    out.bits = encode_half_exact(static_cast<float>(v));
    return out;
  } else if constexpr (std::is_same_v<T, hvd::bfloat16_t>) {
    T out;
    out.bits = static_cast<std::uint16_t>(bits_of_float(static_cast<float>(v)) >> 16);
    return out;
  } else {
    return static_cast<Store<T>>(v);
  }
}

// Rounds `x` to nearest even in a binary format with `precision` significand
// bits (implicit bit included) and minimum normal exponent `emin`
// (subnormals included). No overflow handling: test values stay small.
inline double round_to_precision(double x, int precision, int emin) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  std::frexp(x, &e);  // x = m * 2^e, 0.5 <= |m| < 1: leading bit at 2^(e-1)
  const int quantum = std::max(e - 1, emin) - (precision - 1);
  return std::ldexp(std::nearbyint(std::ldexp(x, -quantum)), quantum);
}

// One rounding of a double to the floating type T.
template <typename T>
double round_to(double v) {
  if constexpr (std::is_same_v<T, hvd::float16_t>) {
    return round_to_precision(v, 11, -14);
  } else if constexpr (std::is_same_v<T, hvd::bfloat16_t>) {
    return round_to_precision(v, 8, -126);
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return v;
  }
}

template <typename T>
std::string value_str(Store<T> v) {
  std::ostringstream out;
  if constexpr (is_float_v<T>) {
    out.precision(17);
    out << to_double<T>(v);
  } else if constexpr (sizeof(Store<T>) == 1) {
    out << static_cast<int>(v);
  } else {
    out << v;
  }
  return out.str();
}

// ---- Deterministic values ---------------------------------------------------

inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// FNV-1a: the same on every rank (unlike nothing else, but explicit).
inline std::uint64_t salt_of(const std::string& name) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  return h;
}

inline std::uint64_t element_hash(std::uint64_t salt, int rank, std::int64_t i) {
  return mix64(salt ^ (static_cast<std::uint64_t>(rank) << 44) ^ static_cast<std::uint64_t>(i));
}

// What kind of values to generate. Chosen so that no reduction over up to
// 4 ranks overflows and every float sum/product is exact (dyadic values).
enum class Pattern {
  kSmall,   // Sum/Average: |x| <= max/4 for ints; dyadic small floats
  kFull,    // Min/Max: any value of an int type; dyadic floats of wide range
  kFactor,  // Product: ints in [-2, 2] ([0, 3] unsigned); floats in {±0.5..±2}
  kOr,      // bool, reduced by OR: mostly 0
  kAnd,     // bool, reduced by AND: mostly 1
  kBits,    // copies (allgather/broadcast): any finite bit pattern
};

inline Pattern pattern_for(ReduceOp op, DataType dtype) {
  if (dtype == DataType::kBool) {
    return (op == ReduceOp::kMin || op == ReduceOp::kProduct) ? Pattern::kAnd : Pattern::kOr;
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return Pattern::kSmall;
    case ReduceOp::kMin:
    case ReduceOp::kMax: return Pattern::kFull;
    case ReduceOp::kProduct: return Pattern::kFactor;
  }
  return Pattern::kSmall;
}

// Dyadic grid of a float type: x = (k - M) * 2^-F with k in [0, 2M].
// With prescale/postscale factors in {0.25 .. 4}, sums of 4 such values stay
// exact in the type (fp16: 11 significand bits, bf16: 8, fp32: 24).
template <typename T>
void float_grid(std::int64_t* m, int* f) {
  if constexpr (std::is_same_v<T, hvd::float16_t>) {
    *m = 256;
    *f = 2;
  } else if constexpr (std::is_same_v<T, hvd::bfloat16_t>) {
    *m = 32;
    *f = 2;
  } else if constexpr (std::is_same_v<T, float>) {
    *m = std::int64_t{1} << 20;
    *f = 4;
  } else {
    *m = std::int64_t{1} << 40;
    *f = 8;
  }
}

template <typename T>
Store<T> value_from_hash(Pattern p, std::uint64_t h) {
  if constexpr (is_bool_v<T>) {
    switch (p) {
      case Pattern::kOr: return (h % 8 == 0) ? 1 : 0;
      case Pattern::kAnd: return (h % 8 != 0) ? 1 : 0;
      default: return static_cast<std::uint8_t>(h & 1);
    }
  } else if constexpr (is_int_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (p) {
      case Pattern::kSmall: {
        const std::uint64_t quarter = static_cast<std::uint64_t>(std::numeric_limits<T>::max()) / 4;
        if constexpr (std::is_signed_v<T>) {
          return static_cast<T>(static_cast<std::int64_t>(h % (2 * quarter + 1)) -
                                static_cast<std::int64_t>(quarter));
        } else {
          return static_cast<T>(h % (quarter + 1));
        }
      }
      case Pattern::kFactor:
        if constexpr (std::is_signed_v<T>) {
          return static_cast<T>(static_cast<int>(h % 5) - 2);
        } else {
          return static_cast<T>(h % 4);
        }
      default:  // kFull, kBits: any value
        return static_cast<T>(static_cast<U>(h));
    }
  } else {  // floating
    switch (p) {
      case Pattern::kFactor: {
        static const double kFactors[] = {-2, -1.5, -1, -0.5, 0.5, 1, 1.5, 2};
        if (h % 16 == 15) return from_double<T>(0.0);
        return from_double<T>(kFactors[(h >> 8) % 8]);
      }
      case Pattern::kBits: {
        if constexpr (std::is_same_v<T, float>) {
          std::uint32_t bits = static_cast<std::uint32_t>(h);
          if ((bits & 0x7f800000u) == 0x7f800000u) bits &= ~0x40000000u;  // no inf/NaN
          float v;
          std::memcpy(&v, &bits, sizeof v);
          return v;
        } else if constexpr (std::is_same_v<T, double>) {
          std::uint64_t bits = h;
          if ((bits & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL) bits &= ~(1ULL << 62);
          double v;
          std::memcpy(&v, &bits, sizeof v);
          return v;
        } else {
          T v;
          std::uint16_t bits = static_cast<std::uint16_t>(h);
          const std::uint16_t exp_mask = std::is_same_v<T, hvd::float16_t> ? 0x7c00 : 0x7f80;
          if ((bits & exp_mask) == exp_mask) bits &= ~0x4000;
          v.bits = bits;
          return v;
        }
      }
      default: {  // kSmall, kFull
        std::int64_t m;
        int f;
        float_grid<T>(&m, &f);
        const std::int64_t k =
            static_cast<std::int64_t>(h % static_cast<std::uint64_t>(2 * m + 1)) - m;
        return from_double<T>(std::ldexp(static_cast<double>(k), -f));
      }
    }
  }
}

template <typename T>
Store<T> input_value(Pattern p, std::uint64_t salt, int rank, std::int64_t i) {
  return value_from_hash<T>(p, element_hash(salt, rank, i));
}

// ---- Buffers ----------------------------------------------------------------

inline std::int64_t num_elements(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

// Caller-owned memory of any dtype and shape. An empty buffer's view has a
// null data pointer (as an empty std::vector's data() may).
class Buffer {
 public:
  Buffer() = default;
  Buffer(DataType dtype, std::vector<std::int64_t> shape)
      : dtype_(dtype),
        shape_(std::move(shape)),
        bytes_(static_cast<std::size_t>(hvdtest::num_elements(shape_)) * hvd::dtype_size(dtype)) {}
  Buffer(DataType dtype, std::int64_t count) : Buffer(dtype, std::vector<std::int64_t>{count}) {}

  DataType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  std::int64_t num_elements() const { return hvdtest::num_elements(shape_); }
  std::size_t size_bytes() const { return bytes_.size(); }
  void* data() { return bytes_.empty() ? nullptr : bytes_.data(); }
  const void* data() const { return bytes_.empty() ? nullptr : bytes_.data(); }
  template <typename S>
  S* as() {
    return reinterpret_cast<S*>(bytes_.data());
  }
  template <typename S>
  const S* as() const {
    return reinterpret_cast<const S*>(bytes_.data());
  }
  hvd::TensorView view(hvd::Device device = hvd::Device::cpu()) {
    return hvd::TensorView(data(), dtype_, shape_, device);
  }
  // Every byte set to `byte` (a poison value for outputs).
  void poison(unsigned char byte = 0xA5) { std::fill(bytes_.begin(), bytes_.end(), byte); }

  // Fills element i with input_value(pattern, salt, rank, i).
  void fill(Pattern p, std::uint64_t salt, int rank) {
    hvd::visit_dtype(dtype_, [&](auto zero) {
      using T = decltype(zero);
      Store<T>* out = as<Store<T>>();
      const std::int64_t n = num_elements();
      for (std::int64_t i = 0; i < n; ++i) out[i] = input_value<T>(p, salt, rank, i);
    });
  }

 private:
  DataType dtype_ = DataType::kFloat32;
  std::vector<std::int64_t> shape_;
  std::vector<unsigned char> bytes_;
};

// ---- Reference reductions ---------------------------------------------------

// v (a value of T) scaled as Horovod's ScaleBuffer does: in double for
// double and the integers (truncated), in float32 with the factor rounded
// to float32 for the other floating types (the product of two float32
// values is exact in double), rounded once to T. A factor of 1 is skipped.
template <typename T>
double horovod_scaled(double v, double factor) {
  if (factor == 1.0) return v;
  if constexpr (std::is_same_v<T, double>) {
    return v * factor;
  } else if constexpr (is_int_v<T>) {
    return std::trunc(v * factor);
  } else {
    const float product = static_cast<float>(v * static_cast<float>(factor));
    return round_to<T>(product);
  }
}

// The expected allreduce result of element i: every rank r < size
// contributed input_value(p, salt, r, i); output = postscale *
// reduce(prescale * input) with the documented per-dtype semantics
// (types.h): Average is the sum scaled by postscale / average_over
// (default: size), scalings as horovod_scaled. Integer and bool tensors
// are only tested with factors 1.
template <typename T>
Store<T> reference_allreduce(ReduceOp op, Pattern p, std::uint64_t salt, int size, std::int64_t i,
                             double prescale, double postscale, int average_over = 0) {
  const double post =
      op == ReduceOp::kAverage ? postscale / (average_over ? average_over : size) : postscale;
  if constexpr (is_bool_v<T>) {
    const bool use_or = (op == ReduceOp::kSum || op == ReduceOp::kMax);
    bool acc = !use_or;
    for (int r = 0; r < size; ++r) {
      const bool v = input_value<T>(p, salt, r, i) != 0;
      acc = use_or ? (acc || v) : (acc && v);
    }
    return acc ? 1 : 0;
  } else if constexpr (is_int_v<T>) {
    using U = std::make_unsigned_t<T>;
    const T first = input_value<T>(p, salt, 0, i);
    // Two's complement wraparound: accumulate modulo 2^64, then truncate.
    std::uint64_t acc = static_cast<std::uint64_t>(static_cast<std::int64_t>(first));
    if constexpr (std::is_unsigned_v<T>) acc = static_cast<std::uint64_t>(first);
    T best = first;
    for (int r = 1; r < size; ++r) {
      const T v = input_value<T>(p, salt, r, i);
      const std::uint64_t uv = std::is_signed_v<T>
                                   ? static_cast<std::uint64_t>(static_cast<std::int64_t>(v))
                                   : static_cast<std::uint64_t>(v);
      if (op == ReduceOp::kProduct) {
        acc *= uv;
      } else {
        acc += uv;
      }
      if (op == ReduceOp::kMin) best = std::min(best, v);
      if (op == ReduceOp::kMax) best = std::max(best, v);
    }
    const T wrapped = static_cast<T>(static_cast<U>(acc));
    switch (op) {
      case ReduceOp::kMin:
      case ReduceOp::kMax: return best;
      case ReduceOp::kAverage:
        // The sum times 1 / size in double, truncated; skipped for one rank
        // (so int64 stays exact).
        if (post == 1.0) return wrapped;
        return static_cast<T>(horovod_scaled<T>(static_cast<double>(wrapped), post));
      default: return wrapped;
    }
  } else {  // floating: every intermediate below is exact in double
    double acc = 0;
    for (int r = 0; r < size; ++r) {
      const double v = to_double<T>(input_value<T>(p, salt, r, i)) * prescale;
      if (r == 0) {
        acc = v;
      } else if (op == ReduceOp::kProduct) {
        acc *= v;
      } else if (op == ReduceOp::kMin) {
        acc = std::min(acc, v);
      } else if (op == ReduceOp::kMax) {
        acc = std::max(acc, v);
      } else {
        acc += v;
      }
    }
    // The reduction is exact in T here; then Average and postscale.
    return from_double<T>(horovod_scaled<T>(round_to<T>(acc), post));
  }
}

// Equality of one element: exact bits for ints/bools; exact value for floats
// (so +0 == -0; no NaN is ever produced).
template <typename T>
bool same_value(Store<T> a, Store<T> b) {
  if constexpr (is_float_v<T>) {
    return to_double<T>(a) == to_double<T>(b);
  } else {
    return a == b;
  }
}

// Collects element mismatches and reports them once, with the first few.
class MismatchReport {
 public:
  explicit MismatchReport(std::string what) : what_(std::move(what)) {}
  // True while the details of a new mismatch are still wanted.
  bool wants_details() const { return count_ < 5; }
  void add(std::int64_t i, const std::string& got, const std::string& expected) {
    if (count_++ < 5) {
      details_ << "\n    [" << i << "] got " << got << ", expected " << expected;
    }
  }
  void add_count() { ++count_; }
  // Returns true if everything matched; adds a (non-fatal) failure otherwise.
  bool finish(std::int64_t total) const {
    if (count_ == 0) return true;
    ADD_FAILURE() << what_ << ": " << count_ << " of " << total << " elements differ"
                  << details_.str();
    return false;
  }

 private:
  std::string what_;
  std::int64_t count_ = 0;
  std::ostringstream details_;
};

// The expected allreduce output of a tensor of `out_shape`, every element
// from reference_allreduce; element i of it is element first_element + i of
// the reduced tensor (a reducescatter share starts past the others').
inline Buffer reference_buffer(DataType dtype, const std::vector<std::int64_t>& shape, ReduceOp op,
                               Pattern p, std::uint64_t salt, int size, double prescale,
                               double postscale, std::int64_t first_element = 0,
                               int average_over = 0) {
  Buffer expected(dtype, shape);
  const std::int64_t n = expected.num_elements();
  hvd::visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    Store<T>* want = expected.as<Store<T>>();
    for (std::int64_t i = 0; i < n; ++i) {
      want[i] = reference_allreduce<T>(op, p, salt, size, first_element + i, prescale, postscale,
                                       average_over);
    }
  });
  return expected;
}

// Rows of rank r's reducescatter share: rows / size, plus one for the first
// rows % size ranks.
inline std::int64_t share_rows(std::int64_t rows, int size, int r) {
  return rows / size + (r < rows % size ? 1 : 0);
}

// The first row of rank r's reducescatter share.
inline std::int64_t share_first_row(std::int64_t rows, int size, int r) {
  std::int64_t first = 0;
  for (int q = 0; q < r; ++q) first += share_rows(rows, size, q);
  return first;
}

// Compares element values (same_value) of `out` with `expected`.
inline bool check_values(const Buffer& out, const Buffer& expected, const std::string& what) {
  MismatchReport report(what);
  const std::int64_t n = expected.num_elements();
  if (out.num_elements() != n || out.dtype() != expected.dtype()) {
    ADD_FAILURE() << what << ": wrong output buffer";
    return false;
  }
  hvd::visit_dtype(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const Store<T>* got = out.as<Store<T>>();
    const Store<T>* want = expected.as<Store<T>>();
    for (std::int64_t i = 0; i < n; ++i) {
      if (same_value<T>(got[i], want[i])) continue;
      if (report.wants_details()) {
        report.add(i, value_str<T>(got[i]), value_str<T>(want[i]));
      } else {
        report.add_count();
      }
    }
  });
  return report.finish(n);
}

// Checks an allreduce output against reference_allreduce.
inline bool check_allreduce(const Buffer& out, ReduceOp op, Pattern p, std::uint64_t salt, int size,
                            double prescale, double postscale, const std::string& what,
                            int average_over = 0) {
  return check_values(out,
                      reference_buffer(out.dtype(), out.shape(), op, p, salt, size, prescale,
                                       postscale, 0, average_over),
                      what);
}

// Checks that `buf` holds exactly `expected`'s bytes (same dtype), element-wise.
inline bool check_same_bytes(const void* got_data, const Buffer& expected,
                             const std::string& what) {
  if (expected.size_bytes() == 0 ||
      std::memcmp(got_data, expected.data(), expected.size_bytes()) == 0) {
    return true;
  }
  MismatchReport report(what);
  const std::int64_t n = expected.num_elements();
  hvd::visit_dtype(expected.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const Store<T>* want = expected.as<Store<T>>();
    const unsigned char* got_bytes = static_cast<const unsigned char*>(got_data);
    for (std::int64_t i = 0; i < n; ++i) {
      Store<T> got;
      std::memcpy(&got, got_bytes + i * sizeof(Store<T>), sizeof got);
      if (std::memcmp(&got, &want[i], sizeof got) == 0) continue;
      if (report.wants_details()) {
        report.add(i, value_str<T>(got), value_str<T>(want[i]));
      } else {
        report.add_count();
      }
    }
  });
  return report.finish(n);
}

// ---- Errors -----------------------------------------------------------------

// How long a test waits for an operation that should complete (or fail)
// promptly: long enough for oversubscribed CI, short enough that a library
// hang shows up as a test failure (hvd::Timeout) instead of a stuck job.
inline std::chrono::milliseconds kPatience() { return std::chrono::seconds(60); }

// Runs `submit` (which returns a Work) and waits for it; returns the error
// thrown by either step, or null on success. Errors may legitimately surface
// at submission (local validation) or through Work::wait().
template <typename Submit>
std::exception_ptr error_of(Submit&& submit) {
  try {
    hvd::Work work = submit();
    work.wait(kPatience());
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The rank numbers a message names: every number list that follows the word
// "rank"/"ranks"/"rank(s)", e.g. "rank 0", "ranks 1, 2 and 3", "ranks [1, 3]".
inline std::set<int> ranks_named(const std::string& message) {
  const std::string m = lower(message);
  std::set<int> ranks;
  std::size_t pos = 0;
  while ((pos = m.find("rank", pos)) != std::string::npos) {
    std::size_t i = pos + 4;
    if (m.compare(i, 3, "(s)") == 0)
      i += 3;
    else if (i < m.size() && m[i] == 's')
      ++i;
    else if (i < m.size() && std::isalpha(static_cast<unsigned char>(m[i]))) {
      pos = i;  // "ranking" etc.
      continue;
    }
    while (i < m.size()) {
      const char c = m[i];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        int value = 0;
        while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i]))) {
          value = value * 10 + (m[i] - '0');
          ++i;
        }
        ranks.insert(value);
      } else if (c == ' ' || c == ',' || c == ':' || c == '=' || c == '#' || c == '[' || c == '{' ||
                 c == '(') {
        ++i;
      } else if (m.compare(i, 4, "and ") == 0) {
        i += 4;
      } else {
        break;
      }
    }
    pos = i;
  }
  return ranks;
}

// Expects `error` to be an E whose message contains every string of
// `substrings` (case-insensitive) and names every rank of `ranks`.
template <typename E>
void expect_error(std::exception_ptr error, const std::vector<std::string>& substrings,
                  const std::vector<int>& ranks = {}, const std::string& context = "") {
  if (!error) {
    ADD_FAILURE() << context << ": expected an error, the operation succeeded";
    return;
  }
  try {
    std::rethrow_exception(error);
  } catch (const E& e) {
    const std::string message = e.what();
    for (const auto& s : substrings) {
      EXPECT_NE(lower(message).find(lower(s)), std::string::npos)
          << context << ": the error message does not mention \"" << s << "\": " << message;
    }
    const std::set<int> named = ranks_named(message);
    for (int r : ranks) {
      EXPECT_TRUE(named.count(r)) << context << ": the error message does not name rank " << r
                                  << ": " << message;
    }
  } catch (const hvd::Timeout& e) {
    ADD_FAILURE() << context << ": the operation did not finish within " << kPatience().count()
                  << " ms (expected an error): " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << context << ": wrong error type, message: " << e.what();
  } catch (...) {
    ADD_FAILURE() << context << ": a non-std exception";
  }
}

inline std::string error_message(std::exception_ptr error) {
  if (!error) return "(no error)";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "(non-std exception)";
  }
}

}  // namespace hvdtest
