#include "core/execution/reduction.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/check.h"
#include "core/execution/reduction_kernels.h"
#include "core/execution/simd_dispatch.h"

namespace hvd {
namespace {
using namespace elementwise;

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

void check_buffer(const void* pointer, std::size_t count, const char* what) {
  HVD_CHECK(pointer != nullptr || count == 0, InvalidArgument,
            what << ": null buffer for " << count << " elements");
}

void run_many(DataType dtype, ReduceOp op, void* dst, const void* const* srcs, std::size_t n,
              std::size_t count, bool avx2) {
  HVD_CHECK(n >= 1 && srcs != nullptr, InvalidArgument, "reduce_many: needs at least one input");
  const ReduceManyFn fn =
      pick_reduce_many(dtype, op, avx2);  // validates dtype and op even for count 0
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
  run_many(dtype, op, dst, srcs, n, count, use_avx2_kernels());
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
