#include "core/execution/result_plan.h"

#include "base/check.h"

namespace hvd {
namespace {

// Elements per first-dimension row of `shape` (at least one dimension).
std::int64_t row_elements(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::size_t d = 1; d < shape.size(); ++d) n *= shape[d];
  return n;
}

}  // namespace

ResultPlan gather_plan(const Request& request, const Response& response) {
  ResultPlan plan;
  // The request's shape, not the view's: a scalar was submitted as one row.
  plan.shape = request.shape;
  const std::int64_t row = row_elements(plan.shape);
  plan.shape[0] = 0;
  plan.counts.reserve(response.first_dims.size());
  for (std::int64_t rows : response.first_dims) {
    plan.shape[0] += rows;
    plan.counts.push_back(static_cast<std::size_t>(rows * row));
  }
  return plan;
}

ResultPlan exchange_plan(const Request& request, const Response& response, int rank, int size) {
  HVD_CHECK_EQ(response.splits.size(), static_cast<std::size_t>(size) * size, Error,
               "alltoall of tensor '" << response.name << "': malformed splits matrix");
  ResultPlan plan;
  plan.shape = request.shape;
  const std::int64_t row = row_elements(plan.shape);
  plan.send_counts.resize(size);
  plan.counts.resize(size);
  plan.received_splits.assign(size, 0);
  plan.shape[0] = 0;
  for (int r = 0; r < size; ++r) {
    plan.send_counts[r] = static_cast<std::size_t>(response.splits[rank * size + r] * row);
    plan.received_splits[r] = response.splits[r * size + rank];
    plan.counts[r] = static_cast<std::size_t>(plan.received_splits[r] * row);
    plan.shape[0] += plan.received_splits[r];
  }
  return plan;
}

ResultPlan scatter_plan(const Request& request, int rank, int size) {
  ResultPlan plan;
  plan.shape = request.shape;
  const std::int64_t row = row_elements(plan.shape);
  const std::int64_t rows = plan.shape[0];
  plan.counts.resize(size);
  for (int r = 0; r < size; ++r) {
    plan.counts[r] = static_cast<std::size_t>((rows / size + (r < rows % size ? 1 : 0)) * row);
  }
  plan.shape[0] = rows / size + (rank < rows % size ? 1 : 0);
  return plan;
}

double average_divisor(ReduceOp op, int size) { return op == ReduceOp::kAverage ? size : 1.0; }

}  // namespace hvd
