#include "core/runtime/collective_executor.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <optional>
#include <sstream>

#include "base/check.h"
#include "core/execution/fusion_plan.h"
#include "core/execution/reduction.h"
#include "core/execution/result_plan.h"

namespace hvd {

CollectiveExecutor::CollectiveExecutor(Backend& backend, const Topology& topology,
                                       Timeline* timeline, DeviceOperations* device,
                                       std::size_t fusion_threshold, FlightRecorder* recorder)
    : topology_(topology),
      trace_(timeline, backend.name()),
      cpu_(backend, topology, trace_),
      device_(device, cpu_, topology),
      fusion_threshold_(fusion_threshold),
      recorder_(recorder),
      backend_label_(recorder ? recorder->intern(backend.name()) : ""),
      device_label_(recorder && device ? recorder->intern(device->name()) : "") {}

void CollectiveExecutor::record_launch(const TensorEntry* const* batch, std::size_t count,
                                       std::chrono::steady_clock::time_point agreed) {
  const std::uint64_t number = batch[0]->request.flight_number;
  const auto now = std::chrono::steady_clock::now();
  const char* backend =
      batch[0]->request.device.type == DeviceType::kCUDA ? device_label_ : backend_label_;
  for (std::size_t i = 0; i < count; ++i) {
    recorder_->launched(batch[i]->request.flight_number, number, backend, agreed, now);
  }
}

std::optional<TensorEntry> CollectiveExecutor::take(const Response& response, TensorQueue& queue) {
  std::optional<TensorEntry> entry = queue.try_take(response.name);
  if (entry) return entry;
  // A rank that joined has no entry: it adds zeros to allreduces and has
  // nothing to do for barriers and errors.
  HVD_CHECK(has_joined(response, topology_.rank), Error,
            "no tensor named '" << response.name << "' is in flight");
  if (response.op_type != OpType::kAllreduce || response.error_kind != ErrorKind::kNone) {
    return std::nullopt;
  }
  const Request& agreed = response.joined_template;
  return joined_zeros_.make(agreed,
                            agreed.device.type == DeviceType::kCUDA && device_.zeroes_on_device());
}

std::size_t CollectiveExecutor::execute_all(const std::vector<const Response*>& responses,
                                            TensorQueue& queue,
                                            std::chrono::steady_clock::time_point agreed) {
  if (responses.size() == 1) {
    // Nothing to fuse: no plan (a lone small collective's whole cost
    // matters).
    std::optional<TensorEntry> entry = take(*responses.front(), queue);
    const std::size_t bytes = entry ? entry->input.size_bytes() : 0;
    if (entry) {
      const TensorEntry* lone = &*entry;
      if (recorder_) record_launch(&lone, 1, agreed);
      execute(*responses.front(), *entry);
    }
    joined_zeros_.release();
    return bytes;
  }
  std::size_t bytes = 0;
  std::vector<const Response*> runs;
  std::vector<TensorEntry> entries;
  std::vector<FusionCandidate> candidates;
  runs.reserve(responses.size());
  entries.reserve(responses.size());
  candidates.reserve(responses.size());
  for (const Response* response : responses) {
    std::optional<TensorEntry> entry = take(*response, queue);
    if (!entry) continue;
    runs.push_back(response);
    bytes += entry->input.size_bytes();
    entries.push_back(std::move(*entry));
    const Request& r = entries.back().request;
    const ReduceOp op = r.reduce_op == ReduceOp::kAverage ? ReduceOp::kSum : r.reduce_op;
    candidates.push_back(fusion_candidate(*response, r, entries.back().input.num_elements(),
                                          cpu_.stages_in_float32(r.dtype, op)));
  }
  for (const std::vector<std::size_t>& group : plan_fusion(candidates, fusion_threshold_)) {
    if (group.size() == 1) {
      const TensorEntry* lone = &entries[group.front()];
      if (recorder_) record_launch(&lone, 1, agreed);
      execute(*runs[group.front()], entries[group.front()]);
      continue;
    }
    std::vector<const TensorEntry*> members;
    for (std::size_t i : group) members.push_back(&entries[i]);
    if (recorder_) record_launch(members.data(), members.size(), agreed);
    execute_fused(*runs[group.front()], members);
  }
  joined_zeros_.release();
  return bytes;
}

bool CollectiveExecutor::inline_input(const Request& request, std::size_t capacity,
                                      TensorQueue& queue, std::string& out) const {
  return inline_input(request, capacity, queue.input_of(request.name), out);
}

bool CollectiveExecutor::goes_inline(const Request& request, const TensorView& input,
                                     std::size_t capacity) {
  const std::size_t bytes = input.size_bytes();
  return request.op_type == OpType::kAllreduce && request.reduce_op != ReduceOp::kAdasum &&
         request.device.type == DeviceType::kCPU && request.error.empty() && bytes > 0 &&
         bytes <= capacity;
}

bool CollectiveExecutor::inline_input(const Request& request, std::size_t capacity,
                                      const TensorView* input, std::string& out) const {
  if (!input || !goes_inline(request, *input, capacity)) return false;
  out.resize(input->size_bytes());
  scale_copy(request.dtype, input->data, out.data(),
             static_cast<std::size_t>(input->num_elements()), 1.0, request.prescale_factor);
  return true;
}

std::size_t CollectiveExecutor::execute_inline(const Response& response,
                                               const std::vector<std::string>& inputs,
                                               TensorQueue& queue,
                                               std::chrono::steady_clock::time_point agreed) {
  std::optional<TensorEntry> entry = take(response, queue);
  if (!entry) return 0;
  const TensorEntry* lone = &*entry;
  if (recorder_) record_launch(&lone, 1, agreed);
  try {
    const bool traced = trace_.active();
    const auto start = ExecutionTrace::now_if(traced);
    const std::size_t bytes = reduce_inline(entry->request, entry->output, inputs);
    if (traced) trace_.record({&*entry}, "INLINE_ALLREDUCE", start, TimelineClock::now());
    entry->work->complete();
    return bytes;
  } catch (...) {
    entry->work->fail(std::current_exception());
    return 0;
  }
}

std::size_t CollectiveExecutor::reduce_inline(const Request& request, const TensorView& output,
                                              const std::vector<std::string>& inputs) {
  const std::size_t count = output.num_elements();
  const std::size_t bytes = count * dtype_size(request.dtype);
  inline_sources_.clear();
  for (const std::string& input : inputs) {
    HVD_CHECK(input.size() == bytes, Error,
              "inline allreduce of '" << request.name << "': a rank sent " << input.size()
                                      << " bytes, this rank has " << bytes);
    inline_sources_.push_back(input.data());
  }
  const ReduceOp op = request.reduce_op == ReduceOp::kAverage ? ReduceOp::kSum : request.reduce_op;
  reduce_many(request.dtype, op, output.data, inline_sources_.data(), inline_sources_.size(),
              count);
  scale_in_place(request.dtype, output.data, count,
                 average_divisor(request.reduce_op, topology_.size), request.postscale_factor);
  return bytes;
}

void CollectiveExecutor::execute_fused(const Response& response,
                                       const std::vector<const TensorEntry*>& group) {
  try {
    if (group.front()->request.device.type == DeviceType::kCUDA) {
      device_.run(response, group);  // the device completes the Works
      return;
    }
    std::vector<std::int64_t> unused_splits;  // alltoall only
    cpu_.run(response, group, unused_splits);
    for (const TensorEntry* member : group) member->work->complete();
  } catch (...) {
    for (const TensorEntry* member : group) member->work->fail(std::current_exception());
    note_if_peer_lost();
  }
}

void CollectiveExecutor::execute(const Response& response, const TensorEntry& entry) {
  try {
    if (response.error_kind != ErrorKind::kNone) {
      entry.work->fail(make_error(response.error_kind, response.error_message));
      return;
    }
    if (entry.request.device.type == DeviceType::kCUDA) {
      device_.run(response, {&entry});
      return;
    }
    std::vector<std::int64_t> received_splits;
    Tensor output = cpu_.run(response, {&entry}, received_splits);
    entry.work->complete(std::move(output), std::move(received_splits));
  } catch (...) {
    entry.work->fail(std::current_exception());
    note_if_peer_lost();
  }
}

void CollectiveExecutor::note_if_peer_lost() {
  try {
    throw;
  } catch (const RankFailure&) {
    if (!peer_lost_) peer_lost_ = std::current_exception();
  } catch (...) {
  }
}

}  // namespace hvd
