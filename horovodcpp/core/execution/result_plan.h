// Result plans: the shape and per-rank element counts of the collectives
// whose result the library allocates (allgather, alltoall, reducescatter),
// and the divisor of Average. The same for CPU and CUDA tensors; every rank
// computes them from the same agreed response.
#pragma once

#include <cstdint>
#include <vector>

#include "core/negotiation/message.h"

namespace hvd {

struct ResultPlan {
  std::vector<std::int64_t> shape;  // the result's
  // allgather, reducescatter: elements of each rank's part; alltoall:
  // elements received from each rank.
  std::vector<std::size_t> counts;
  std::vector<std::size_t> send_counts;       // alltoall: elements sent to each rank
  std::vector<std::int64_t> received_splits;  // alltoall: rows received from each rank
};

// Allgather: every rank's rows (response.first_dims) stacked.
ResultPlan gather_plan(const Request& request, const Response& response);
// Alltoall: row `rank` of the agreed size x size splits matrix is sent,
// column `rank` received. Throws on a malformed matrix.
ResultPlan exchange_plan(const Request& request, const Response& response, int rank, int size);
// Reducescatter: rows shared as evenly as possible, the first
// (rows % size) ranks getting one more.
ResultPlan scatter_plan(const Request& request, int rank, int size);

// What a reduction's result is divided by: the set's size for Average
// (joined ranks, which add zeros, included, as Horovod does), else 1.
double average_divisor(ReduceOp op, int size);

}  // namespace hvd
