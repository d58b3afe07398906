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

// dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[n-1][i], folded left in
// that order (n >= 1), in one pass over the inputs: the shared-memory
// backend's reduction of every rank's slot. float16/bfloat16 accumulate in
// float32 and round once at the end (n-1 reduce_into calls would round n-1
// times). Integers, floats and bool give exactly the reduce_into fold. `dst`
// may be srcs[0] (the same range); it must not overlap any other input. Uses
// AVX2 (and F16C) where the CPU has them, with the same results as the
// portable code.
void reduce_many(DataType dtype, ReduceOp op, void* dst, const void* const* srcs, std::size_t n,
                 std::size_t count);

// dst[i] = src[i] * (factor / divisor) in one pass (src may equal dst), as
// Horovod's ScaleBuffer scales (Average is its postscale / size): the factor
// is computed once in double; float64 multiplies in double, float32 in
// float32 (the factor rounded to float32), float16/bfloat16 in float32 and
// round to nearest even; integers multiply in double, truncate toward zero
// and saturate at the type's range. A factor of exactly 1 copies (as
// Horovod skips the scaling); bool values are copied as is.
void scale_copy(DataType dtype, const void* src, void* dst, std::size_t count, double divisor,
                double factor);
void scale_in_place(DataType dtype, void* buffer, std::size_t count, double divisor, double factor);

// float16/bfloat16 -> float32 of each element scaled by `factor` as
// scale_copy does (rounded to the 16-bit type first, as the input to a
// float32 reduction: the same result as scaling, then widening).
void widen_to_float32(DataType half_dtype, const void* src, float* dst, std::size_t count,
                      double factor);
// float32 -> float16/bfloat16 (to nearest even), then scaled by
// factor / divisor as scale_copy does: a float32 reduction's result rounded
// to the 16-bit type, then Average and postscale applied to it.
void narrow_from_float32(const float* src, DataType half_dtype, void* dst, std::size_t count,
                         double divisor, double factor);

namespace detail {
// reduce_many without the AVX2 dispatch (tests compare the two paths).
void reduce_many_portable(DataType dtype, ReduceOp op, void* dst, const void* const* srcs,
                          std::size_t n, std::size_t count);
}  // namespace detail

}  // namespace hvd
