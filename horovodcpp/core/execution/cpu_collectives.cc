#include "core/execution/cpu_collectives.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>

#include "core/execution/fused_layout.h"
#include "core/execution/half_shares.h"
#include "core/execution/reduction.h"

namespace hvd {
namespace {

bool is_half(DataType dtype) { return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16; }

// A result the backend overwrites whole: host memory not zeroed first (a
// pass over every byte saved).
Tensor result_tensor(DataType dtype, std::vector<std::int64_t> shape) {
  const std::size_t bytes = TensorView(nullptr, dtype, shape).size_bytes();
  std::shared_ptr<unsigned char> storage(new unsigned char[std::max<std::size_t>(bytes, 1)],
                                         std::default_delete<unsigned char[]>());
  void* data = storage.get();
  return Tensor(dtype, std::move(shape), Device{}, data, std::move(storage));
}

}  // namespace

CpuCollectives::CpuCollectives(Backend& backend, const Topology& topology,
                               const ExecutionTrace& trace)
    : backend_(backend),
      topology_(topology),
      trace_(trace),
      adasum_(backend, topology.rank, topology.size) {}

Tensor CpuCollectives::run(const Response& response, const std::vector<const TensorEntry*>& group,
                           std::vector<std::int64_t>& received_splits) {
  const TensorEntry& entry = *group.front();
  const bool traced = trace_.active();
  const auto op_start = ExecutionTrace::now_if(traced);
  Tensor output;
  switch (response.op_type) {
    case OpType::kAllreduce:
      allreduce(group);  // traces its phases itself
      return output;
    case OpType::kAllgather: output = allgather(entry, gather_plan(entry.request, response)); break;
    case OpType::kBroadcast:
      backend_.broadcast(entry.input.data, entry.input.num_elements(), entry.input.dtype,
                         entry.request.root_rank);
      break;
    case OpType::kBarrier: break;  // negotiation completing means every rank has arrived
    case OpType::kAlltoall: {
      ResultPlan plan = exchange_plan(entry.request, response, topology_.rank, topology_.size);
      output = alltoall(entry, plan);
      received_splits = std::move(plan.received_splits);
      break;
    }
    case OpType::kReducescatter:
      output = reducescatter(entry, scatter_plan(entry.request, topology_.rank, topology_.size));
      break;
    case OpType::kJoin:
      output = Tensor(DataType::kInt32, {});
      *output.data_as<std::int32_t>() = response.last_joined_rank;
      break;
  }
  if (traced) {
    trace_.record(group, trace_.op_event_name(response.op_type), op_start, TimelineClock::now());
  }
  return output;
}

// Planned as a large group: one of 16-bit shares at 2 bytes an element (a
// small group widens outside the fusion buffer).
bool CpuCollectives::stages_in_float32(DataType dtype, ReduceOp op) const {
  return widens(dtype, op, std::numeric_limits<std::size_t>::max());
}

// Adasum computes in float32 or float64 only.
bool CpuCollectives::widens(DataType dtype, ReduceOp op, std::size_t count) const {
  if (!is_half(dtype)) return false;
  if (op == ReduceOp::kAdasum) return true;
  return (op == ReduceOp::kSum || op == ReduceOp::kProduct) &&
         !backend_.capabilities().half_reduction_in_float32 && !as_half_shares(dtype, op, count);
}

bool CpuCollectives::as_half_shares(DataType dtype, ReduceOp op, std::size_t count) const {
  return is_half(dtype) && (op == ReduceOp::kSum || op == ReduceOp::kProduct) &&
         topology_.size > 1 && count >= kHalfSharesMinBytes / dtype_size(dtype) &&
         backend_.capabilities().half_as_16bit_shares;
}

void CpuCollectives::reduce_packed(const std::vector<const TensorEntry*>& group, void* buffer,
                                   DataType dtype, ReduceOp op) {
  std::vector<std::size_t> counts;
  counts.reserve(group.size());
  for (const TensorEntry* entry : group) counts.push_back(entry->input.num_elements());
  if (op == ReduceOp::kAdasum) return adasum_.allreduce(buffer, counts, dtype);
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  if (as_half_shares(dtype, op, total)) {
    return allreduce_half_shares(backend_, buffer, total, topology_.rank, topology_.size, dtype, op,
                                 shares_);
  }
  backend_.allreduce(buffer, total, dtype, op);
}

void CpuCollectives::trace_fused(const std::vector<const TensorEntry*>& group,
                                 TimelineClock::time_point t0, TimelineClock::time_point t1,
                                 TimelineClock::time_point t2) const {
  trace_.record(group, "MEMCPY_IN_FUSION_BUFFER", t0, t1);
  trace_.record(group, trace_.op_event_name(OpType::kAllreduce), t1, t2);
  trace_.record(group, "MEMCPY_OUT_FUSION_BUFFER", t2, TimelineClock::now());
}

void CpuCollectives::allreduce(const std::vector<const TensorEntry*>& group) {
  const Request& request = group.front()->request;
  const bool traced = trace_.active();  // once: start/stop may come from another thread
  const DataType dtype = request.dtype;
  const bool average = request.reduce_op == ReduceOp::kAverage;
  const ReduceOp op = average ? ReduceOp::kSum : request.reduce_op;
  const double divisor = average_divisor(request.reduce_op, topology_.size);
  std::size_t total = 0;
  for (const TensorEntry* entry : group) total += entry->input.num_elements();

  if (widens(dtype, op, total)) {
    // Widen (prescale folded in), reduce in float32, round once to 16 bits
    // (then Average and postscale): the sum does not depend on the
    // backend's reduction order.
    if (staging_.size() < total) staging_.resize(total);
    const auto t0 = ExecutionTrace::now_if(traced);
    std::size_t offset = 0;
    for (const TensorEntry* entry : group) {
      const std::size_t n = entry->input.num_elements();
      widen_to_float32(dtype, entry->input.data, staging_.data() + offset, n,
                       request.prescale_factor);
      offset += n;
    }
    const auto t1 = ExecutionTrace::now_if(traced);
    reduce_packed(group, staging_.data(), DataType::kFloat32, op);
    const auto t2 = ExecutionTrace::now_if(traced);
    offset = 0;
    for (const TensorEntry* entry : group) {
      const std::size_t n = entry->input.num_elements();
      narrow_from_float32(staging_.data() + offset, dtype, entry->output.data, n, divisor,
                          request.postscale_factor);
      offset += n;
    }
    if (traced) trace_fused(group, t0, t1, t2);
    return;
  }
  if (group.size() == 1) {
    // Alone: reduce in the output itself, no fusion-buffer copies.
    const TensorEntry& entry = *group.front();
    scale_copy(dtype, entry.input.data, entry.output.data, total, 1.0, request.prescale_factor);
    const auto t1 = ExecutionTrace::now_if(traced);
    if (op == ReduceOp::kAdasum || as_half_shares(dtype, op, total)) {
      reduce_packed(group, entry.output.data, dtype, op);
      scale_in_place(dtype, entry.output.data, total, divisor, request.postscale_factor);
    } else {
      backend_.allreduce_scaled(entry.output.data, total, dtype, op, divisor,
                                request.postscale_factor);
    }
    if (traced) {
      trace_.record(group, trace_.op_event_name(OpType::kAllreduce), t1, TimelineClock::now());
    }
    return;
  }
  // Pack with prescale, one backend call, unpack with Average and postscale:
  // each tensor's bytes are touched once on the way in and once out.
  const std::size_t element_size = dtype_size(dtype);
  fusion_buffer_.grow_discarding(total * element_size);
  unsigned char* buffer = fusion_buffer_.data();
  if (op != ReduceOp::kAdasum && !as_half_shares(dtype, op, total) &&
      backend_.capabilities().waits_on_network && FusionPipeline::worth_it(total * element_size)) {
    return allreduce_pipelined(group, buffer, op, divisor);
  }
  const auto t0 = ExecutionTrace::now_if(traced);
  std::size_t offset = 0;
  for (const TensorEntry* entry : group) {
    const std::size_t n = entry->input.num_elements();
    scale_copy(dtype, entry->input.data, buffer + offset, n, 1.0, request.prescale_factor);
    offset += n * element_size;
  }
  const auto t1 = ExecutionTrace::now_if(traced);
  reduce_packed(group, buffer, dtype, op);
  const auto t2 = ExecutionTrace::now_if(traced);
  offset = 0;
  for (const TensorEntry* entry : group) {
    const std::size_t n = entry->input.num_elements();
    scale_copy(dtype, buffer + offset, entry->output.data, n, divisor, request.postscale_factor);
    offset += n * element_size;
  }
  if (traced) trace_fused(group, t0, t1, t2);
}

void CpuCollectives::allreduce_pipelined(const std::vector<const TensorEntry*>& group,
                                         unsigned char* buffer, ReduceOp op, double divisor) {
  const Request& request = group.front()->request;
  const DataType dtype = request.dtype;
  const std::size_t element_size = dtype_size(dtype);
  const bool traced = trace_.active();
  const auto t0 = TimelineClock::now();
  // Tensors reduced in their own memory skip the copies; their Average
  // and postscale come in place instead of on the way out.
  const FusedLayout layout(group, element_size);
  const auto copy_in = [&](std::size_t begin, std::size_t end) {
    layout.for_each_part(
        begin, end, [&](const FusedLayout::Part& part, std::size_t at, std::size_t bytes) {
          if (part.in_own_memory) return;
          scale_copy(dtype, static_cast<const unsigned char*>(part.entry->input.data) + at,
                     buffer + part.offset + at, bytes / element_size, 1.0, request.prescale_factor);
        });
  };
  const auto reduce = [&](std::size_t begin, std::size_t end, int lane) {
    backend_.allreduce_in_lane(layout.reduced_at(begin, buffer), (end - begin) / element_size,
                               dtype, op, lane);
  };
  const auto copy_out = [&](std::size_t begin, std::size_t end) {
    layout.for_each_part(
        begin, end, [&](const FusedLayout::Part& part, std::size_t at, std::size_t bytes) {
          auto* output = static_cast<unsigned char*>(part.entry->output.data) + at;
          const std::size_t count = bytes / element_size;
          if (part.in_own_memory) {
            scale_in_place(dtype, output, count, divisor, request.postscale_factor);
          } else {
            scale_copy(dtype, buffer + part.offset + at, output, count, divisor,
                       request.postscale_factor);
          }
        });
  };
  const FusionPipeline::Times times = pipeline_.run(layout.bounds(), copy_in, reduce, copy_out,
                                                    backend_.capabilities().allreduce_lanes);
  // The copies that were not hidden: before the first chunk's reduction and
  // after the last one's.
  if (traced) trace_fused(group, t0, times.first_copied_in, times.last_reduced);
}

Tensor CpuCollectives::allgather(const TensorEntry& entry, const ResultPlan& plan) {
  Tensor output = result_tensor(entry.input.dtype, plan.shape);
  backend_.allgatherv(entry.input.data, output.data(), plan.counts, entry.input.dtype);
  return output;
}

Tensor CpuCollectives::alltoall(const TensorEntry& entry, const ResultPlan& plan) {
  Tensor output = result_tensor(entry.input.dtype, plan.shape);
  backend_.alltoallv(entry.input.data, plan.send_counts, output.data(), plan.counts,
                     entry.input.dtype);
  return output;
}

// Scaling and Average as in allreduce; float16/bfloat16 are reduced in
// float32 and rounded once, as allreduce does.
Tensor CpuCollectives::reducescatter(const TensorEntry& entry, const ResultPlan& plan) {
  const Request& request = entry.request;
  const DataType dtype = request.dtype;
  const std::vector<std::size_t>& counts = plan.counts;
  Tensor output = result_tensor(dtype, plan.shape);
  const std::size_t count = entry.input.num_elements();
  const std::size_t mine = counts[topology_.rank];
  const double divisor = average_divisor(request.reduce_op, topology_.size);

  if (widens(dtype, ReduceOp::kSum, count)) {
    if (staging_.size() < count) staging_.resize(count);
    widen_to_float32(dtype, entry.input.data, staging_.data(), count, request.prescale_factor);
    std::vector<float> share(mine);
    backend_.reducescatter(staging_.data(), share.data(), counts, DataType::kFloat32,
                           ReduceOp::kSum);
    narrow_from_float32(share.data(), dtype, output.data(), mine, divisor,
                        request.postscale_factor);
    return output;
  }
  // 16-bit shares only read their input (prescaled in 16 bits: what widening
  // with the factor gives, rounded to the 16-bit type first, reduction.h).
  const bool shares = as_half_shares(dtype, ReduceOp::kSum, count);
  void* input = entry.input.data;
  std::unique_ptr<unsigned char[]> scratch;
  if (request.prescale_factor != 1.0 ||
      !(shares || backend_.capabilities().reducescatter_keeps_input)) {
    // The backend may clobber its input: reduce a copy (prescaled in the
    // same pass), never the caller's tensor.
    scratch.reset(new unsigned char[entry.input.size_bytes()]);
    scale_copy(dtype, entry.input.data, scratch.get(), count, 1.0, request.prescale_factor);
    input = scratch.get();
  }
  if (shares) {
    reducescatter_half_shares(backend_, input, output.data(), counts, topology_.rank, dtype,
                              ReduceOp::kSum, shares_);
  } else {
    backend_.reducescatter(input, output.data(), counts, dtype, ReduceOp::kSum);
  }
  scale_in_place(dtype, output.data(), mine, divisor, request.postscale_factor);
  return output;
}

}  // namespace hvd
