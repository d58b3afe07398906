#include "core/execution/half_shares.h"

#include "base/check.h"
#include "core/execution/reduction.h"

namespace hvd {

void reducescatter_half_shares(Backend& backend, const void* input, void* output,
                               const std::vector<std::size_t>& counts, int rank, DataType dtype,
                               ReduceOp op, std::vector<unsigned char>& scratch) {
  HVD_CHECK((dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) &&
                (op == ReduceOp::kSum || op == ReduceOp::kProduct),
            InvalidArgument, "16-bit shares reduce float16/bfloat16 Sum or Product only");
  const std::size_t size = counts.size();
  const std::size_t mine = counts[rank];
  const std::size_t element = dtype_size(dtype);
  scratch.resize(size * mine * element);
  // Every rank's share of this rank's slice, in rank order.
  backend.alltoallv(input, counts, scratch.data(), std::vector<std::size_t>(size, mine), dtype);
  std::vector<const void*> shares(size);
  for (std::size_t r = 0; r < size; ++r) shares[r] = scratch.data() + r * mine * element;
  reduce_many(dtype, op, output, shares.data(), size, mine);
}

void allreduce_half_shares(Backend& backend, void* buffer, std::size_t count, int rank, int size,
                           DataType dtype, ReduceOp op, std::vector<unsigned char>& scratch) {
  std::vector<std::size_t> counts(size);
  for (int r = 0; r < size; ++r) {
    counts[r] = count / size + (static_cast<std::size_t>(r) < count % size ? 1 : 0);
  }
  std::vector<unsigned char> slice(counts[rank] * dtype_size(dtype));
  reducescatter_half_shares(backend, buffer, slice.data(), counts, rank, dtype, op, scratch);
  backend.allgatherv(slice.data(), buffer, counts, dtype);
}

}  // namespace hvd
