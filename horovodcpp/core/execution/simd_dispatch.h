// Runtime choice between the portable kernels and their AVX2/F16C builds,
// made once from what the CPU offers (cpu_features.h). Both give the same
// bits.
#pragma once

#include <cstddef>

#include "horovodcpp/types.h"

namespace hvd {

// dst = srcs[0] op srcs[1] op ... op srcs[n-1] over `count` elements.
using ReduceManyFn = void (*)(void* dst, const void* const* srcs, std::size_t n, std::size_t count);

// The many-input kernel for `dtype` and `op`: the AVX2 build where `avx2`
// is true (and the CPU has it), else the portable one. Throws
// InvalidArgument for Average, Adasum or an unknown dtype or op.
ReduceManyFn pick_reduce_many(DataType dtype, ReduceOp op, bool avx2);

// Whether this CPU runs the AVX2 builds (false where they are not compiled).
bool use_avx2_kernels();

}  // namespace hvd
