// Element-wise kernels on CPU buffers of any DataType: the reductions and
// scalings the backends and the core apply. Semantics per dtype: types.h.
#pragma once

#include <cstddef>

#include "horovodcpp/types.h"

namespace hvd {

// inout[i] = op(inout[i], in[i]). `op` is Sum, Min, Max or Product
// (Average is a Sum followed by scale_in_place). float16/bfloat16 compute in
// float32 and round to nearest even. bool: Sum/Max = OR, Product/Min = AND.
void reduce_into(DataType dtype, ReduceOp op, void* inout, const void* in, std::size_t count);

// dst[i] = src[i] / divisor * factor in one pass (src may equal dst),
// computed in double for floating types (one rounding to the dtype).
// Integers: the division rounds toward zero, then the factor is applied in
// double and rounded toward zero, saturating. bool values are copied as is.
void scale_copy(DataType dtype, const void* src, void* dst, std::size_t count, double divisor,
                double factor);
void scale_in_place(DataType dtype, void* buffer, std::size_t count, double divisor,
                    double factor);

// float16/bfloat16 -> float32, multiplying by `factor` (in float32 range).
void widen_to_float32(DataType half_dtype, const void* src, float* dst, std::size_t count,
                      double factor);
// float32 -> float16/bfloat16 of (src[i] / divisor * factor), computed in
// double and rounded once to nearest even.
void narrow_from_float32(const float* src, DataType half_dtype, void* dst, std::size_t count,
                         double divisor, double factor);

}  // namespace hvd
