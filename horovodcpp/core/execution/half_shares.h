// float16/bfloat16 Sum and Product with 16 bits on the wire: instead of
// widening every element to float32 around the backend's allreduce, every
// rank sends each peer that peer's slice of its 16-bit input, reduces the
// slice it owns from every rank's shares in float32, in rank order,
// rounding once (reduce_many), and sends the rounded slice to every peer:
// pairwise exchanges (Backend::sendrecv) in messages of 128 KiB. Half the
// bytes of the widened allreduce, and the same result: each element
// accumulated in float32 and rounded once.
#pragma once

#include <cstddef>
#include <vector>

#include "core/execution/backend.h"

namespace hvd {

// Below this many bytes of 16-bit data the widened allreduce (one
// collective) is kept: latency, not bytes, dominates there, and shares
// take 2(size-1) exchanges.
constexpr std::size_t kHalfSharesMinBytes = std::size_t{64} << 10;

// `counts[r]` elements of `input` (consecutive, in rank order) are rank r's
// slice; `output` receives this rank's slice reduced over every rank.
// `scratch` is reused across calls.
void reducescatter_half_shares(Backend& backend, const void* input, void* output,
                               const std::vector<std::size_t>& counts, int rank, DataType dtype,
                               ReduceOp op, std::vector<unsigned char>& scratch);

// In place over `count` elements, split as evenly as possible over `size`
// ranks.
void allreduce_half_shares(Backend& backend, void* buffer, std::size_t count, int rank, int size,
                           DataType dtype, ReduceOp op, std::vector<unsigned char>& scratch);

}  // namespace hvd
