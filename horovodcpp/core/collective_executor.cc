#include "core/collective_executor.h"

#include <cstring>

#include "core/check.h"
#include "core/reduction.h"

namespace hvd {
namespace {

bool is_half(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
}

}  // namespace

void CollectiveExecutor::execute(const Response& response, TensorEntry entry) {
  try {
    if (response.error_kind != ErrorKind::kNone) {
      entry.work->fail(make_error(response.error_kind, response.error_message));
      return;
    }
    // Every rank agreed on the device, so every rank fails the same way here.
    HVD_CHECK(entry.request.device.type == DeviceType::kCPU, InvalidArgument,
              op_type_name(response.op_type)
                  << " of tensor '" << response.name << "': tensors on "
                  << entry.request.device.str()
                  << " are not supported by this build (CPU tensors only)");
    Tensor output;
    switch (response.op_type) {
      case OpType::kAllreduce:
        allreduce(entry);
        break;
      case OpType::kAllgather:
        output = allgather(entry, response);
        break;
      case OpType::kBroadcast:
        backend_.broadcast(entry.input.data, entry.input.num_elements(), entry.input.dtype,
                           entry.request.root_rank);
        break;
      case OpType::kBarrier:
        break;  // negotiation completing means every rank has arrived
    }
    entry.work->complete(std::move(output));
  } catch (...) {
    entry.work->fail(std::current_exception());
  }
}

void CollectiveExecutor::allreduce(const TensorEntry& entry) {
  const Request& request = entry.request;
  const std::size_t count = entry.input.num_elements();
  const DataType dtype = request.dtype;
  const bool average = request.reduce_op == ReduceOp::kAverage;
  const ReduceOp op = average ? ReduceOp::kSum : request.reduce_op;

  if (is_half(dtype) && (op == ReduceOp::kSum || op == ReduceOp::kProduct) &&
      !backend_.capabilities().half_reduction_in_float32) {
    allreduce_half_in_float32(entry, count);
    return;
  }
  if (entry.output.data != entry.input.data && count > 0) {
    std::memcpy(entry.output.data, entry.input.data, entry.input.size_bytes());
  }
  if (request.prescale_factor != 1.0) {
    scale_in_place(dtype, entry.output.data, count, 1.0, request.prescale_factor);
  }
  backend_.allreduce(entry.output.data, count, dtype, op);
  const double divisor = average ? topology_.size : 1.0;
  if (divisor != 1.0 || request.postscale_factor != 1.0) {
    scale_in_place(dtype, entry.output.data, count, divisor, request.postscale_factor);
  }
}

// Sum/Product of float16/bfloat16: widen to float32 (prescale folded in),
// reduce in float32, and round once to 16 bits (Average and postscale
// folded in), so the result does not depend on the backend's reduction order.
void CollectiveExecutor::allreduce_half_in_float32(const TensorEntry& entry, std::size_t count) {
  const Request& request = entry.request;
  if (staging_.size() < count) staging_.resize(count);
  widen_to_float32(request.dtype, entry.input.data, staging_.data(), count,
                   request.prescale_factor);
  const bool average = request.reduce_op == ReduceOp::kAverage;
  backend_.allreduce(staging_.data(), count, DataType::kFloat32,
                     average ? ReduceOp::kSum : request.reduce_op);
  narrow_from_float32(staging_.data(), request.dtype, entry.output.data, count,
                      average ? topology_.size : 1.0, request.postscale_factor);
}

Tensor CollectiveExecutor::allgather(const TensorEntry& entry, const Response& response) {
  const TensorView& input = entry.input;
  // The request's shape, not the view's: a scalar was submitted as one row.
  std::vector<std::int64_t> shape = entry.request.shape;
  std::int64_t row_elements = 1;
  for (std::size_t d = 1; d < shape.size(); ++d) row_elements *= shape[d];
  shape[0] = 0;
  std::vector<std::size_t> counts;
  counts.reserve(response.first_dims.size());
  for (std::int64_t rows : response.first_dims) {
    shape[0] += rows;
    counts.push_back(static_cast<std::size_t>(rows * row_elements));
  }
  Tensor output(input.dtype, shape);
  backend_.allgatherv(input.data, output.data(), counts, input.dtype);
  return output;
}

}  // namespace hvd
