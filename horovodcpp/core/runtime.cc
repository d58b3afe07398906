#include "core/runtime.h"

#include "core/check.h"
#include "core/env.h"
#include "core/logging.h"

namespace hvd {
namespace {

std::string chosen_transport() {
  auto name = env_setting("CPU_OPERATIONS");
  if (!name) name = env_setting("CONTROLLER");
  if (name) {
    for (char& c : *name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return *name;
  }
  return available_transports().front();
}

// Problems a rank can see on its own. They are not thrown here: the request
// still goes to rank 0, which fails the tensor on every rank with them, so
// the other ranks do not wait for a tensor that never comes.
std::string local_error(const Request& request, const TensorView& input,
                        const TensorView& output) {
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

}  // namespace

Runtime::Runtime() : transport_(create_transport(chosen_transport())) {
  set_log_rank(topology().rank);
  if (topology().rank == 0) {
    if (auto path = env_setting("TIMELINE"); path && !path->empty()) {
      timeline_.start(*path, env_int("TIMELINE_MARK_CYCLES", 0) != 0);
    }
  }
  coordinator_ = std::make_unique<Coordinator>(*transport_.controller, *transport_.backend, queue_,
                                               topology().rank == 0 ? &timeline_ : nullptr);
  coordinator_->start();
  HVD_LOG(Debug) << "initialized: rank " << topology().rank << " of " << topology().size
                 << ", backend " << transport_.backend->name();
}

Runtime::~Runtime() {
  coordinator_.reset();  // joins the thread before the transport goes away
  timeline_.stop();
  set_log_rank(-1);
}

void Runtime::start_timeline(const std::string& path, bool mark_cycles) {
  if (topology().rank == 0) timeline_.start(path, mark_cycles);
}

void Runtime::stop_timeline() {
  if (topology().rank == 0) timeline_.stop();
}

std::string Runtime::auto_name(OpType op_type) {
  long long n = unnamed_counts_[static_cast<int>(op_type)]++;
  if (op_type == OpType::kBarrier) return "barrier." + std::to_string(n);
  return std::string(op_type_name(op_type)) + ".noname." + std::to_string(n);
}

Work Runtime::submit(Request request, const TensorView& input, const TensorView& output) {
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

  auto work = std::make_shared<detail::WorkState>();
  queue_.push(TensorEntry{std::move(request), input, output, work});
  return Work(work);
}

std::vector<Work> Runtime::submit_group(const Request& request,
                                        const std::vector<TensorView>& inputs,
                                        const std::vector<TensorView>& outputs) {
  HVD_CHECK_EQ(inputs.size(), outputs.size(), InvalidArgument,
               "grouped " << op_type_name(request.op_type)
                          << ": need as many outputs as inputs");
  std::vector<Work> works;
  if (inputs.empty()) return works;
  const std::string group_id = request.name.empty() ? auto_name(request.op_type) : request.name;
  works.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Request member = request;
    member.name = group_id + "." + std::to_string(i);
    member.group_id = group_id;
    member.group_size = static_cast<std::int32_t>(inputs.size());
    works.push_back(submit(std::move(member), inputs[i], outputs[i]));
  }
  return works;
}

}  // namespace hvd
