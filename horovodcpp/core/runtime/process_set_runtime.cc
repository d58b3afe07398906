#include "core/runtime/process_set_runtime.h"

#include <algorithm>
#include <utility>

#include "base/check.h"
#include "core/process_sets/process_set_rules.h"

namespace hvd {
namespace {

// Problems a rank can see on its own. They are not thrown here: the request
// still goes to rank 0, which fails the tensor on every rank with them, so
// the other ranks do not wait for a tensor that never comes.
std::string local_error(const Request& request, const TensorView& input, const TensorView& output) {
  for (std::int64_t dim : input.shape) {
    if (dim < 0) return "negative dimension in shape " + shape_str(input.shape);
  }
  if (input.data == nullptr && input.num_elements() > 0) return "input data pointer is null";
  if ((request.op_type == OpType::kAlltoall || request.op_type == OpType::kReducescatter) &&
      input.shape.empty()) {
    return std::string(op_type_name(request.op_type)) +
           " needs a tensor of at least one dimension (its rows are split across ranks)";
  }
  if (request.op_type != OpType::kAllreduce) return "";
  for (std::int64_t dim : output.shape) {
    if (dim < 0) return "negative dimension in output shape " + shape_str(output.shape);
  }
  if (output.dtype != input.dtype) {
    return std::string("output dtype ") + dtype_name(output.dtype) + " differs from input dtype " +
           dtype_name(input.dtype);
  }
  if (output.num_elements() != input.num_elements()) {
    return "output has " + std::to_string(output.num_elements()) + " elements but input has " +
           std::to_string(input.num_elements());
  }
  if (output.device != input.device) {
    return "output is on " + output.device.str() + " but input is on " + input.device.str();
  }
  if (output.data == nullptr && output.num_elements() > 0) return "output data pointer is null";
  return "";
}

// Alltoall without splits sends equal parts: expanded here so that rank 0
// sees every rank's actual splits (which it checks against the shape).
std::string expand_equal_splits(Request& request, int size) {
  if (!request.splits.empty() || request.shape.empty()) return "";
  const std::int64_t rows = request.shape[0];
  if (rows % size != 0) {
    return "no splits given and the first dimension " + std::to_string(rows) +
           " is not divisible by the number of ranks " + std::to_string(size);
  }
  request.splits.assign(size, rows / size);
  return "";
}

// A broadcast's root is a global rank (as in Horovod); the set's backend
// counts in the set. A root outside the set fails the tensor on every member.
std::string root_in_set(Request& request, const ProcessSet& set) {
  const std::vector<int>& ranks = set.ranks();
  const auto it = std::lower_bound(ranks.begin(), ranks.end(), request.root_rank);
  if (it == ranks.end() || *it != request.root_rank) {
    const std::string where = set.id() == 0
                                  ? "in [0, " + std::to_string(set.size()) + ")"
                                  : "a member of process set " + std::to_string(set.id()) +
                                        " (global ranks " + rank_list_str(ranks) + ")";
    const std::string error = "root rank " + std::to_string(request.root_rank) + " is not " + where;
    request.root_rank = -1;
    return error;
  }
  request.root_rank = static_cast<std::int32_t>(it - ranks.begin());
  return "";
}

}  // namespace

ProcessSetRuntime::ProcessSetRuntime(ProcessSet set, Transport transport,
                                     const BackendFactory& backends,
                                     const CoordinatorSettings& settings, Timeline* timeline,
                                     ProcessSetChannel* channel, HvdrunLink* hvdrun,
                                     FlightRecorderDumps* flight)
    : set_(std::move(set)),
      transport_(std::move(transport)),
      device_(backends.create_device_operations(*transport_.controller, transport_.backend->name(),
                                                channel, timeline)),
      timeline_(timeline),
      recorder_(flight ? &flight->recorder() : nullptr) {
  CoordinatorSettings coordinator_settings = settings;
  // The device operations need no guard of their own: NCCL's sockets pass
  // MSG_NOSIGNAL, and staging runs on the transport's backend.
  coordinator_settings.sigpipe_free = transport_.sigpipe_free;
  coordinator_ = std::make_unique<Coordinator>(*transport_.controller, *transport_.backend, queue_,
                                               coordinator_settings, timeline, set_.id() == 0,
                                               device_.get(), hvdrun, flight);
  coordinator_->start();
}

ProcessSetRuntime::~ProcessSetRuntime() { stop(); }

void ProcessSetRuntime::stop() { coordinator_->stop(); }

std::string ProcessSetRuntime::auto_name(OpType op_type) {
  // One name for every barrier: a barrier blocks its caller, and ranks that
  // joined skip the barriers the others run meanwhile, so a count would
  // leave the ranks' names out of step.
  if (op_type == OpType::kBarrier) return "barrier";
  long long n = unnamed_counts_[static_cast<int>(op_type)]++;
  return std::string(op_type_name(op_type)) + ".noname." + std::to_string(n);
}

Work ProcessSetRuntime::submit(Request request, const TensorView& input, const TensorView& output) {
  prepare(request, input, output);
  return enqueue(std::move(request), input, output, false);
}

Work ProcessSetRuntime::enqueue(Request request, const TensorView& input, const TensorView& output,
                                bool caller_waits) {
  TensorEntry entry = entry_of(std::move(request), input, output);
  Work work(entry.work);
  queue_.push(std::move(entry), caller_waits);
  return work;
}

void ProcessSetRuntime::run_blocking(Request request, const TensorView& input,
                                     const TensorView& output,
                                     std::optional<std::chrono::milliseconds> timeout) {
  prepare(request, input, output);
  AloneCall call(std::move(request), input, output);
  if (coordinator_->run_alone(call)) {
    if (call.work) Work(call.work).wait(timeout);
    if (call.error) std::rethrow_exception(call.error);
    return;
  }
  enqueue(std::move(call.request), input, output, true).wait(timeout);
}

void ProcessSetRuntime::prepare(Request& request, const TensorView& input,
                                const TensorView& output) {
  request.rank = topology().rank;
  if (request.name.empty()) request.name = auto_name(request.op_type);
  request.dtype = input.dtype;
  request.shape = input.shape;
  // A scalar is gathered as one row.
  if (request.op_type == OpType::kAllgather && request.shape.empty()) request.shape = {1};
  request.device = input.device;
  request.error = local_error(request, input, output);
  if (request.op_type == OpType::kAlltoall && request.error.empty()) {
    request.error = expand_equal_splits(request, topology().size);
  }
  if (request.op_type == OpType::kBroadcast) {
    const std::string root_error = root_in_set(request, set_);
    if (request.error.empty()) request.error = root_error;
  }
  if (recorder_) {
    request.flight_number =
        recorder_->start({request.name, op_type_name(request.op_type), request.reduce_op,
                          request.dtype, request.device.type, request.shape, set_.id()});
  }
}

TensorEntry ProcessSetRuntime::make_entry(Request request, const TensorView& input,
                                          const TensorView& output) {
  prepare(request, input, output);
  return entry_of(std::move(request), input, output);
}

TensorEntry ProcessSetRuntime::entry_of(Request request, const TensorView& input,
                                        const TensorView& output) {
  TensorEntry entry;
  if (input.device.type == DeviceType::kCUDA && device_ && request.error.empty()) {
    // Marks what the caller's stream has queued so far; a failure travels
    // with the request like the checks above.
    try {
      entry.ready_event = device_->record_ready(input);
    } catch (const std::exception& e) {
      request.error = e.what();
    }
  }
  entry.request = std::move(request);
  entry.input = input;
  entry.output = output;
  entry.work = std::make_shared<detail::WorkState>(queue_.wakeup());
  entry.work->record_in(recorder_, entry.request.flight_number);
  // Only the timeline's QUEUE phase needs it (a clock read costs as much
  // as a tenth of a small collective's whole path).
  if (timeline_ && timeline_->active()) entry.submitted = std::chrono::steady_clock::now();
  return entry;
}

std::vector<Work> ProcessSetRuntime::submit_group(const Request& request,
                                                  const std::vector<TensorView>& inputs,
                                                  const std::vector<TensorView>& outputs) {
  HVD_CHECK_EQ(inputs.size(), outputs.size(), InvalidArgument,
               "grouped " << op_type_name(request.op_type) << ": need as many outputs as inputs");
  std::vector<Work> works;
  if (inputs.empty()) return works;
  const std::string group_id = request.name.empty() ? auto_name(request.op_type) : request.name;
  std::vector<TensorEntry> members;
  members.reserve(inputs.size());
  works.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Request member = request;
    member.name = group_id + "." + std::to_string(i);
    member.group_id = group_id;
    member.group_size = static_cast<std::int32_t>(inputs.size());
    members.push_back(make_entry(std::move(member), inputs[i], outputs[i]));
    works.emplace_back(members.back().work);
  }
  // All or nothing: a member refused (its name in flight) must not leave
  // the others queued, waiting for it.
  queue_.push_all(std::move(members));
  return works;
}

std::vector<Work> ProcessSetRuntime::submit_each(std::vector<Request> requests,
                                                 const std::vector<TensorView>& inputs) {
  HVD_CHECK_EQ(requests.size(), inputs.size(), InvalidArgument, "need as many tensors as names");
  std::vector<TensorEntry> entries;
  std::vector<Work> works;
  entries.reserve(inputs.size());
  works.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    entries.push_back(make_entry(std::move(requests[i]), inputs[i], inputs[i]));
    works.emplace_back(entries.back().work);
  }
  queue_.push_all(std::move(entries));
  return works;
}

}  // namespace hvd
