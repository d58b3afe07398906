#include "core/execution/collective_executor.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <optional>
#include <sstream>

#include "base/check.h"
#include "core/execution/fusion_plan.h"
#include "core/execution/reduction.h"

namespace hvd {
namespace {

bool is_half(DataType dtype) { return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16; }

// Elements per first-dimension row of `shape` (at least one dimension).
std::int64_t row_elements(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::size_t d = 1; d < shape.size(); ++d) n *= shape[d];
  return n;
}

// Allreduces of equal keys may share the fusion buffer. Only what every rank
// sees alike goes in: the device type, not its index (ranks may use
// different GPUs, and a joined rank's zeros carry the template's device).
std::string fusion_key(const Request& r, const Response& response) {
  std::ostringstream key;
  key << int(r.dtype) << '/' << int(r.reduce_op) << '/' << r.prescale_factor << '/'
      << r.postscale_factor << '/' << int(r.device.type) << '/' << response.joined_ranks.size();
  return key.str();
}

[[noreturn]] void refuse_on_device(const Response& response) {
  HVD_THROW(InvalidArgument, op_type_name(response.op_type) << " of tensor '" << response.name
                                                            << "': not supported for CUDA tensors");
}

}  // namespace

CollectiveExecutor::CollectiveExecutor(Backend& backend, const Topology& topology,
                                       Timeline* timeline, DeviceOperations* device,
                                       std::size_t fusion_threshold)
    : backend_(backend),
      adasum_(backend, topology.rank, topology.size),
      device_(device),
      timeline_(timeline),
      topology_(topology),
      fusion_threshold_(fusion_threshold) {}

std::size_t CollectiveExecutor::execute_all(const std::vector<Response>& responses,
                                            TensorQueue& queue) {
  std::size_t bytes = 0;
  std::vector<const Response*> runs;
  std::vector<TensorEntry> entries;
  std::vector<FusionCandidate> candidates;
  runs.reserve(responses.size());
  entries.reserve(responses.size());
  candidates.reserve(responses.size());
  for (const Response& response : responses) {
    std::optional<TensorEntry> entry = queue.try_take(response.name);
    if (!entry) {
      // A rank that joined has no entry: it adds zeros to allreduces and
      // has nothing to do for barriers and errors.
      const bool joined = std::count(response.joined_ranks.begin(), response.joined_ranks.end(),
                                     topology_.rank) > 0;
      HVD_CHECK(joined, Error, "no tensor named '" << response.name << "' is in flight");
      if (response.op_type != OpType::kAllreduce || response.error_kind != ErrorKind::kNone) {
        continue;
      }
      entry = zeros_for(response.joined_template);
    }
    runs.push_back(&response);
    bytes += entry->input.size_bytes();
    entries.push_back(std::move(*entry));
    const Request& r = entries.back().request;
    FusionCandidate c;
    c.fusable = response.op_type == OpType::kAllreduce && response.error_kind == ErrorKind::kNone;
    if (c.fusable) {
      c.key = fusion_key(r, response);
      const bool staged = stages_in_float32(
          r.dtype, r.reduce_op == ReduceOp::kAverage ? ReduceOp::kSum : r.reduce_op);
      c.bytes =
          entries.back().input.num_elements() * (staged ? sizeof(float) : dtype_size(r.dtype));
      c.group = r.group_id;  // a group's allreduces fuse together
    }
    candidates.push_back(std::move(c));
  }
  for (const std::vector<std::size_t>& group : plan_fusion(candidates, fusion_threshold_)) {
    if (group.size() == 1) {
      execute(*runs[group.front()], std::move(entries[group.front()]));
      continue;
    }
    std::vector<const TensorEntry*> members;
    for (std::size_t i : group) members.push_back(&entries[i]);
    try {
      if (members.front()->request.device.type == DeviceType::kCUDA) {
        run_on_device(*runs[group.front()], members);
        continue;  // device_ completes the Works
      }
      allreduce(members);
      for (const TensorEntry* member : members) member->work->complete();
    } catch (...) {
      for (const TensorEntry* member : members) member->work->fail(std::current_exception());
    }
  }
  zero_tensors_.clear();
  return bytes;
}

// A joined rank's part in an allreduce: zeros of the agreed dtype and shape
// in host memory, with a Work nobody waits for. CUDA tensors' device
// operations take them as they are (staged) or zero device memory of their
// own (NCCL), on this rank's GPU: for those no host memory is allocated and
// zeroed (every cycle, as large as the tensors, on the way to the others'
// collective), the entry has its dtype and shape only.
TensorEntry CollectiveExecutor::zeros_for(const Request& agreed) {
  TensorEntry entry;
  entry.request = agreed;
  if (agreed.device.type == DeviceType::kCUDA && device_ != nullptr &&
      device_->staging() == nullptr) {
    entry.input = TensorView(nullptr, agreed.dtype, agreed.shape, agreed.device);
  } else {
    Tensor zeros(agreed.dtype, agreed.shape);
    zero_tensors_.push_back(zeros);
    entry.input = zeros.view();
  }
  entry.output = entry.input;
  entry.work = std::make_shared<detail::WorkState>();
  entry.joined = true;
  return entry;
}

void CollectiveExecutor::execute(const Response& response, TensorEntry entry) {
  try {
    if (response.error_kind != ErrorKind::kNone) {
      entry.work->fail(make_error(response.error_kind, response.error_message));
      return;
    }
    if (entry.request.device.type == DeviceType::kCUDA) {
      run_on_device(response, {&entry});
      return;
    }
    std::vector<std::int64_t> received_splits;
    Tensor output = run_on_backend(response, {&entry}, received_splits);
    entry.work->complete(std::move(output), std::move(received_splits));
  } catch (...) {
    entry.work->fail(std::current_exception());
  }
}

Tensor CollectiveExecutor::run_on_backend(const Response& response,
                                          const std::vector<const TensorEntry*>& group,
                                          std::vector<std::int64_t>& received_splits) {
  const TensorEntry& entry = *group.front();
  const bool traced = tracing();
  const auto op_start = traced ? TimelineClock::now() : TimelineClock::time_point();
  Tensor output;
  switch (response.op_type) {
    case OpType::kAllreduce:
      allreduce(group);  // traces its phases itself
      return output;
    case OpType::kAllgather: output = allgather(entry, gather_plan(entry, response)); break;
    case OpType::kBroadcast:
      backend_.broadcast(entry.input.data, entry.input.num_elements(), entry.input.dtype,
                         entry.request.root_rank);
      break;
    case OpType::kBarrier: break;  // negotiation completing means every rank has arrived
    case OpType::kAlltoall: {
      ResultPlan plan = exchange_plan(entry, response);
      output = alltoall(entry, plan);
      received_splits = std::move(plan.received_splits);
      break;
    }
    case OpType::kReducescatter: output = reducescatter(entry, scatter_plan(entry)); break;
    case OpType::kJoin:
      output = Tensor(DataType::kInt32, {});
      *output.data_as<std::int32_t>() = response.last_joined_rank;
      break;
  }
  if (traced) trace(group, op_event_name(response.op_type), op_start, TimelineClock::now());
  return output;
}

// Every rank agreed on the device type, so every rank fails alike at the
// first check. The fusion key leaves the GPU index out (ranks use different
// GPUs), so a fused group may hold this rank's tensors of two GPUs: refused
// here, before the device reads one GPU's memory from the other's stream.
void CollectiveExecutor::check_device_group(const Response& response,
                                            const std::vector<const TensorEntry*>& group) const {
  const TensorEntry& first = *group.front();
  HVD_CHECK(device_ != nullptr, InvalidArgument,
            op_type_name(response.op_type)
                << " of tensor '" << response.name << "': tensors on " << first.request.device.str()
                << " need a build with CUDA (this one has none)");
  const TensorEntry* submitted = nullptr;  // a joined rank's zeros are on no GPU of this rank
  for (const TensorEntry* entry : group) {
    if (entry->joined) continue;
    if (submitted == nullptr) submitted = entry;
    HVD_CHECK(entry->request.device == submitted->request.device, InvalidArgument,
              "CUDA tensors of one rank must all be on the same GPU: '"
                  << submitted->request.name << "' is on " << submitted->request.device.str()
                  << ", '" << entry->request.name << "' on " << entry->request.device.str());
  }
}

void CollectiveExecutor::run_on_device(const Response& response,
                                       const std::vector<const TensorEntry*>& group) {
  check_device_group(response, group);
  if (HostStaging* staging = device_->staging()) return run_staged(*staging, response, group);
  const TensorEntry& entry = *group.front();
  switch (response.op_type) {
    case OpType::kAllreduce:
      // Horovod's GPU Adasum sums inside each host and runs Adasum across
      // hosts only: a different reduction, not offered.
      HVD_CHECK(entry.request.reduce_op != ReduceOp::kAdasum, InvalidArgument,
                "allreduce of tensor '"
                    << response.name << "': Adasum of CUDA tensors is not supported on "
                    << device_->name()
                    << "; HOROVODCPP_GPU_OPERATIONS=mpi or gloo stages them through host memory");
      return device_->allreduce(group, topology_.size);
    case OpType::kBroadcast: return device_->broadcast(entry);
    case OpType::kAllgather: return device_->allgather(entry, gather_plan(entry, response));
    case OpType::kAlltoall: return device_->alltoall(entry, exchange_plan(entry, response));
    case OpType::kReducescatter:
      return device_->reducescatter(entry, scatter_plan(entry), scatter_divisor(entry.request));
    default: refuse_on_device(response);
  }
}

// The CPU paths run unchanged on host copies of the entries: fusion,
// scaling, Average and float16/bfloat16 in float32 behave as for CPU tensors.
// A joined rank's zeros are host memory already: they are not staged, so a
// joined rank needs no GPU, and its layout is that of the other ranks.
void CollectiveExecutor::run_staged(HostStaging& staging, const Response& response,
                                    const std::vector<const TensorEntry*>& group) {
  std::vector<const TensorEntry*> submitted;
  for (const TensorEntry* entry : group) {
    if (!entry->joined) submitted.push_back(entry);
  }
  const std::vector<TensorView> staged =
      submitted.empty() ? std::vector<TensorView>() : staging.stage_in(submitted);
  std::vector<TensorEntry> host(group.size());
  std::vector<const TensorEntry*> members;
  for (std::size_t i = 0, s = 0; i < group.size(); ++i) {
    host[i].request = group[i]->request;
    host[i].request.device = Device::cpu();
    // Submitted: reduced in place, then copied to the device output.
    host[i].input = group[i]->joined ? group[i]->input : staged[s++];
    host[i].output = host[i].input;
    host[i].work = group[i]->work;
    members.push_back(&host[i]);
  }
  std::vector<std::int64_t> received_splits;
  const Tensor result = run_on_backend(response, members, received_splits);
  switch (response.op_type) {
    case OpType::kAllreduce:
      if (submitted.empty()) return;  // nobody waits for a joined rank's zeros
      return staging.finish_in_place(submitted, staged);
    case OpType::kBroadcast: return staging.finish_in_place(group, staged);
    case OpType::kAllgather:
    case OpType::kAlltoall:
    case OpType::kReducescatter:
      return staging.finish_with_result(*group.front(), result, std::move(received_splits));
    default: refuse_on_device(response);
  }
}

void CollectiveExecutor::trace(const std::vector<const TensorEntry*>& group,
                               const std::string& phase, TimelineClock::time_point from,
                               TimelineClock::time_point to) {
  for (const TensorEntry* entry : group) timeline_->complete(entry->request.name, phase, from, to);
}

// "MPI_ALLREDUCE", "GLOO_BROADCAST", ...
std::string CollectiveExecutor::op_event_name(OpType op_type) const {
  std::string name = std::string(backend_.name()) + "_" + op_type_name(op_type);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

// Adasum computes in float32 or float64 only.
bool CollectiveExecutor::stages_in_float32(DataType dtype, ReduceOp op) const {
  if (!is_half(dtype)) return false;
  if (op == ReduceOp::kAdasum) return true;
  return (op == ReduceOp::kSum || op == ReduceOp::kProduct) &&
         !backend_.capabilities().half_reduction_in_float32;
}

void CollectiveExecutor::reduce_packed(const std::vector<const TensorEntry*>& group, void* buffer,
                                       DataType dtype, ReduceOp op) {
  std::vector<std::size_t> counts;
  counts.reserve(group.size());
  for (const TensorEntry* entry : group) counts.push_back(entry->input.num_elements());
  if (op == ReduceOp::kAdasum) return adasum_.allreduce(buffer, counts, dtype);
  backend_.allreduce(buffer, std::accumulate(counts.begin(), counts.end(), std::size_t{0}), dtype,
                     op);
}

void CollectiveExecutor::allreduce(const std::vector<const TensorEntry*>& group) {
  const Request& request = group.front()->request;
  const bool traced = tracing();  // once: start/stop may come from another thread
  const DataType dtype = request.dtype;
  const bool average = request.reduce_op == ReduceOp::kAverage;
  const ReduceOp op = average ? ReduceOp::kSum : request.reduce_op;
  const double divisor = average ? topology_.size : 1.0;
  std::size_t total = 0;
  for (const TensorEntry* entry : group) total += entry->input.num_elements();

  if (stages_in_float32(dtype, op)) {
    // Widen (prescale folded in), reduce in float32, round once to 16 bits
    // (then Average and postscale): the sum does not depend on the
    // backend's reduction order.
    if (staging_.size() < total) staging_.resize(total);
    const auto t0 = traced ? TimelineClock::now() : TimelineClock::time_point();
    std::size_t offset = 0;
    for (const TensorEntry* entry : group) {
      const std::size_t n = entry->input.num_elements();
      widen_to_float32(dtype, entry->input.data, staging_.data() + offset, n,
                       request.prescale_factor);
      offset += n;
    }
    const auto t1 = traced ? TimelineClock::now() : TimelineClock::time_point();
    reduce_packed(group, staging_.data(), DataType::kFloat32, op);
    const auto t2 = traced ? TimelineClock::now() : TimelineClock::time_point();
    offset = 0;
    for (const TensorEntry* entry : group) {
      const std::size_t n = entry->input.num_elements();
      narrow_from_float32(staging_.data() + offset, dtype, entry->output.data, n, divisor,
                          request.postscale_factor);
      offset += n;
    }
    if (traced) {
      trace(group, "MEMCPY_IN_FUSION_BUFFER", t0, t1);
      trace(group, op_event_name(OpType::kAllreduce), t1, t2);
      trace(group, "MEMCPY_OUT_FUSION_BUFFER", t2, TimelineClock::now());
    }
    return;
  }
  if (group.size() == 1) {
    // Alone: reduce in the output itself, no fusion-buffer copies.
    const TensorEntry& entry = *group.front();
    scale_copy(dtype, entry.input.data, entry.output.data, total, 1.0, request.prescale_factor);
    const auto t1 = traced ? TimelineClock::now() : TimelineClock::time_point();
    if (op == ReduceOp::kAdasum) {
      reduce_packed(group, entry.output.data, dtype, op);
      scale_in_place(dtype, entry.output.data, total, divisor, request.postscale_factor);
    } else {
      backend_.allreduce_scaled(entry.output.data, total, dtype, op, divisor,
                                request.postscale_factor);
    }
    if (traced) trace(group, op_event_name(OpType::kAllreduce), t1, TimelineClock::now());
    return;
  }
  // Pack with prescale, one backend call, unpack with Average and postscale:
  // each tensor's bytes are touched once on the way in and once out.
  const std::size_t element_size = dtype_size(dtype);
  if (fusion_buffer_.size() < total * element_size) fusion_buffer_.resize(total * element_size);
  unsigned char* buffer = fusion_buffer_.data();
  const auto t0 = traced ? TimelineClock::now() : TimelineClock::time_point();
  std::size_t offset = 0;
  for (const TensorEntry* entry : group) {
    const std::size_t n = entry->input.num_elements();
    scale_copy(dtype, entry->input.data, buffer + offset, n, 1.0, request.prescale_factor);
    offset += n * element_size;
  }
  const auto t1 = traced ? TimelineClock::now() : TimelineClock::time_point();
  reduce_packed(group, buffer, dtype, op);
  const auto t2 = traced ? TimelineClock::now() : TimelineClock::time_point();
  offset = 0;
  for (const TensorEntry* entry : group) {
    const std::size_t n = entry->input.num_elements();
    scale_copy(dtype, buffer + offset, entry->output.data, n, divisor, request.postscale_factor);
    offset += n * element_size;
  }
  if (traced) {
    trace(group, "MEMCPY_IN_FUSION_BUFFER", t0, t1);
    trace(group, op_event_name(OpType::kAllreduce), t1, t2);
    trace(group, "MEMCPY_OUT_FUSION_BUFFER", t2, TimelineClock::now());
  }
}

ResultPlan CollectiveExecutor::gather_plan(const TensorEntry& entry,
                                           const Response& response) const {
  ResultPlan plan;
  // The request's shape, not the view's: a scalar was submitted as one row.
  plan.shape = entry.request.shape;
  const std::int64_t row = row_elements(plan.shape);
  plan.shape[0] = 0;
  plan.counts.reserve(response.first_dims.size());
  for (std::int64_t rows : response.first_dims) {
    plan.shape[0] += rows;
    plan.counts.push_back(static_cast<std::size_t>(rows * row));
  }
  return plan;
}

// response.splits is the agreed size x size matrix of rows: this rank sends
// row `rank` of it and receives column `rank`.
ResultPlan CollectiveExecutor::exchange_plan(const TensorEntry& entry,
                                             const Response& response) const {
  const int size = topology_.size;
  const int rank = topology_.rank;
  HVD_CHECK_EQ(response.splits.size(), static_cast<std::size_t>(size) * size, Error,
               "alltoall of tensor '" << response.name << "': malformed splits matrix");
  ResultPlan plan;
  plan.shape = entry.request.shape;
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

// Rows are shared as evenly as possible, the first (rows % size) ranks
// getting one more.
ResultPlan CollectiveExecutor::scatter_plan(const TensorEntry& entry) const {
  const int size = topology_.size;
  ResultPlan plan;
  plan.shape = entry.request.shape;
  const std::int64_t row = row_elements(plan.shape);
  const std::int64_t rows = plan.shape[0];
  plan.counts.resize(size);
  for (int r = 0; r < size; ++r) {
    plan.counts[r] = static_cast<std::size_t>((rows / size + (r < rows % size ? 1 : 0)) * row);
  }
  plan.shape[0] = rows / size + (topology_.rank < rows % size ? 1 : 0);
  return plan;
}

double CollectiveExecutor::scatter_divisor(const Request& request) const {
  return request.reduce_op == ReduceOp::kAverage ? topology_.size : 1.0;
}

Tensor CollectiveExecutor::allgather(const TensorEntry& entry, const ResultPlan& plan) {
  Tensor output(entry.input.dtype, plan.shape);
  backend_.allgatherv(entry.input.data, output.data(), plan.counts, entry.input.dtype);
  return output;
}

Tensor CollectiveExecutor::alltoall(const TensorEntry& entry, const ResultPlan& plan) {
  Tensor output(entry.input.dtype, plan.shape);
  backend_.alltoallv(entry.input.data, plan.send_counts, output.data(), plan.counts,
                     entry.input.dtype);
  return output;
}

// Scaling and Average as in allreduce; float16/bfloat16 are reduced in
// float32 and rounded once, as allreduce does.
Tensor CollectiveExecutor::reducescatter(const TensorEntry& entry, const ResultPlan& plan) {
  const Request& request = entry.request;
  const DataType dtype = request.dtype;
  const std::vector<std::size_t>& counts = plan.counts;
  Tensor output(dtype, plan.shape);
  const std::size_t count = entry.input.num_elements();
  const std::size_t mine = counts[topology_.rank];
  const double divisor = scatter_divisor(request);

  if (is_half(dtype) && !backend_.capabilities().half_reduction_in_float32) {
    if (staging_.size() < count) staging_.resize(count);
    widen_to_float32(dtype, entry.input.data, staging_.data(), count, request.prescale_factor);
    std::vector<float> share(mine);
    backend_.reducescatter(staging_.data(), share.data(), counts, DataType::kFloat32,
                           ReduceOp::kSum);
    narrow_from_float32(share.data(), dtype, output.data(), mine, divisor,
                        request.postscale_factor);
    return output;
  }
  // The backend may clobber its input: reduce a copy (prescaled in the same
  // pass), never the caller's tensor.
  std::vector<unsigned char> scratch(entry.input.size_bytes());
  scale_copy(dtype, entry.input.data, scratch.data(), count, 1.0, request.prescale_factor);
  backend_.reducescatter(scratch.data(), output.data(), counts, dtype, ReduceOp::kSum);
  scale_in_place(dtype, output.data(), mine, divisor, request.postscale_factor);
  return output;
}

}  // namespace hvd
