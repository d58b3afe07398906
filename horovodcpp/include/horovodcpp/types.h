// Element types, reduction operations and devices of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "horovodcpp/export.h"

namespace hvd {

enum class DataType : std::uint8_t {
  kUInt8,
  kInt8,
  kUInt16,
  kInt16,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kBool,  // one byte per element, 0 or 1
};
constexpr int kNumDataTypes = 11;

// Size of one element in bytes.
HVD_EXPORT std::size_t dtype_size(DataType dtype);
// "float32", "bfloat16", ...
HVD_EXPORT const char* dtype_name(DataType dtype);
HVD_EXPORT bool is_floating(DataType dtype);

// Reductions of allreduce. Semantics per dtype (see docs/reductions.md):
// - floating types: IEEE arithmetic; float16/bfloat16 accumulate in float32
//   and are rounded once (round to nearest even) at the end.
// - integer types: Sum and Product wrap around (two's complement), Average
//   is the Sum divided by the number of ranks, rounded toward zero.
// - bool: Sum and Max are logical OR, Product and Min are logical AND;
//   Average is rejected.
// - Adasum (floating types only, a power-of-two number of ranks): the
//   adaptive summation of Horovod's hvd.Adasum, each tensor combined with
//   coefficients of its own (docs/adasum.md).
enum class ReduceOp : std::uint8_t { kSum, kAverage, kMin, kMax, kProduct, kAdasum };
constexpr int kNumReduceOps = 6;
HVD_EXPORT const char* reduce_op_name(ReduceOp op);

enum class DeviceType : std::uint8_t { kCPU, kCUDA };

struct HVD_EXPORT Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;  // GPU ordinal; 0 for the CPU

  static Device cpu() { return {}; }
  static Device cuda(int index) { return {DeviceType::kCUDA, index}; }
  bool operator==(const Device& other) const { return type == other.type && index == other.index; }
  bool operator!=(const Device& other) const { return !(*this == other); }
  std::string str() const;  // "cpu", "cuda:1"
};

// 16-bit floating point storage types. Arithmetic goes through float.
struct HVD_EXPORT float16_t {
  std::uint16_t bits = 0;
  float16_t() = default;
  explicit float16_t(float value);
  explicit operator float() const;
};
struct HVD_EXPORT bfloat16_t {
  std::uint16_t bits = 0;
  bfloat16_t() = default;
  explicit bfloat16_t(float value);
  explicit operator float() const;
};

// The DataType of a C++ element type: dtype_of<float>() == kFloat32.
template <typename T>
constexpr DataType dtype_of();
template <>
constexpr DataType dtype_of<std::uint8_t>() {
  return DataType::kUInt8;
}
template <>
constexpr DataType dtype_of<std::int8_t>() {
  return DataType::kInt8;
}
template <>
constexpr DataType dtype_of<std::uint16_t>() {
  return DataType::kUInt16;
}
template <>
constexpr DataType dtype_of<std::int16_t>() {
  return DataType::kInt16;
}
template <>
constexpr DataType dtype_of<std::int32_t>() {
  return DataType::kInt32;
}
template <>
constexpr DataType dtype_of<std::int64_t>() {
  return DataType::kInt64;
}
template <>
constexpr DataType dtype_of<float16_t>() {
  return DataType::kFloat16;
}
template <>
constexpr DataType dtype_of<bfloat16_t>() {
  return DataType::kBFloat16;
}
template <>
constexpr DataType dtype_of<float>() {
  return DataType::kFloat32;
}
template <>
constexpr DataType dtype_of<double>() {
  return DataType::kFloat64;
}
template <>
constexpr DataType dtype_of<bool>() {
  return DataType::kBool;
}

// Calls fn(T{}) with the C++ element type T of `dtype` (bool for kBool,
// float16_t for kFloat16, ...): one switch for code generic over dtypes.
template <typename Fn>
decltype(auto) visit_dtype(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kUInt8: return fn(std::uint8_t{});
    case DataType::kInt8: return fn(std::int8_t{});
    case DataType::kUInt16: return fn(std::uint16_t{});
    case DataType::kInt16: return fn(std::int16_t{});
    case DataType::kInt32: return fn(std::int32_t{});
    case DataType::kInt64: return fn(std::int64_t{});
    case DataType::kFloat16: return fn(float16_t{});
    case DataType::kBFloat16: return fn(bfloat16_t{});
    case DataType::kFloat32: return fn(float{});
    case DataType::kFloat64: return fn(double{});
    case DataType::kBool: break;
  }
  return fn(bool{});
}

}  // namespace hvd
