// The public free functions: each finds the current Runtime and forwards.
#include <cstdlib>
#include <mutex>

#include "base/check.h"
#include "core/runtime/runtime.h"
#include "horovodcpp/horovodcpp.h"
#include "registry/built_backends.h"
#include "registry/device_registry.h"
#include "registry/transports.h"

namespace hvd {
namespace {

std::mutex g_runtime_mutex;
std::shared_ptr<Runtime> g_runtime;

std::shared_ptr<Runtime> current() {
  std::lock_guard<std::mutex> lock(g_runtime_mutex);
  HVD_CHECK(g_runtime, InvalidArgument, "horovodcpp is not initialized: call hvd::init() first");
  return g_runtime;
}

Request request_of(OpType op_type, const std::string& name, ReduceOp op = ReduceOp::kSum,
                   int root_rank = 0, double prescale = 1.0, double postscale = 1.0) {
  Request request;
  request.op_type = op_type;
  request.name = name;
  request.reduce_op = op;
  request.root_rank = root_rank;
  request.prescale_factor = prescale;
  request.postscale_factor = postscale;
  return request;
}

Work submit(const ProcessSet& process_set, OpType op_type, const std::string& name,
            const TensorView& input, const TensorView& output, ReduceOp op = ReduceOp::kSum,
            int root_rank = 0, double prescale = 1.0, double postscale = 1.0) {
  return current()->submit(request_of(op_type, name, op, root_rank, prescale, postscale), input,
                           output, process_set);
}

// Under g_runtime_mutex.
void start_runtime(const std::vector<std::vector<int>>& process_sets,
                   const std::vector<int>& world_ranks = {}) {
  g_runtime = std::make_shared<Runtime>(built_backends(), process_sets, world_ranks);
  // Registered after the transport's own exit handlers (MPI_Finalize), so it
  // runs before them: a program that forgets shutdown() still exits cleanly.
  static const bool registered = [] { return std::atexit([] { shutdown(); }) == 0; }();
  (void)registered;
}

}  // namespace

void init() {
  std::lock_guard<std::mutex> lock(g_runtime_mutex);
  if (!g_runtime) start_runtime({});
}

void init(const std::vector<std::vector<int>>& process_sets) {
  std::lock_guard<std::mutex> lock(g_runtime_mutex);
  HVD_CHECK(!g_runtime, InvalidArgument,
            "horovodcpp is already initialized; add process sets with add_process_set()");
  start_runtime(process_sets);
}

void init_on_ranks(const std::vector<int>& world_ranks,
                   const std::vector<std::vector<int>>& process_sets) {
  std::lock_guard<std::mutex> lock(g_runtime_mutex);
  HVD_CHECK(!g_runtime, InvalidArgument,
            "horovodcpp is already initialized; add process sets with add_process_set()");
  start_runtime(process_sets, world_ranks);
}

void shutdown() {
  std::shared_ptr<Runtime> runtime;
  {
    std::lock_guard<std::mutex> lock(g_runtime_mutex);
    runtime.swap(g_runtime);
  }
  runtime.reset();  // stops the coordinator once no submission holds it
}

bool is_initialized() {
  std::lock_guard<std::mutex> lock(g_runtime_mutex);
  return g_runtime != nullptr;
}

int rank() { return current()->topology().rank; }
int size() { return current()->topology().size; }
int local_rank() { return current()->topology().local_rank; }
int local_size() { return current()->topology().local_size; }
int cross_rank() { return current()->topology().cross_rank; }
int cross_size() { return current()->topology().cross_size; }
bool is_homogeneous() { return current()->homogeneous(); }

std::vector<std::string> built_transports() { return available_transports(); }
std::vector<std::string> built_gpu_operations() { return available_gpu_operations(); }
int nccl_version() { return built_nccl_version(); }
bool mpi_threads_supported() {
  const std::shared_ptr<Runtime> runtime = current();
  HVD_CHECK(
      runtime->transport_name() == "mpi", InvalidArgument,
      "mpi_threads_supported(): this job runs on " << runtime->transport_name() << ", not MPI");
  return runtime->transport_multithreaded();
}
std::string transport() { return current()->transport_name(); }
std::string backend_name() { return current()->backend_name(); }

ProcessSet global_process_set() { return current()->global_process_set(); }

ProcessSet add_process_set(std::vector<int> ranks) {
  return current()->add_process_set(std::move(ranks));
}

void remove_process_set(const ProcessSet& process_set) {
  current()->remove_process_set(process_set);
}

std::vector<ProcessSet> process_sets() { return current()->process_sets(); }

Work allreduce_async(const TensorView& input, const TensorView& output, const std::string& name,
                     ReduceOp op, double prescale_factor, double postscale_factor,
                     const ProcessSet& process_set) {
  return submit(process_set, OpType::kAllreduce, name, input, output, op, 0, prescale_factor,
                postscale_factor);
}

std::vector<Work> allreduce_async_many(const std::vector<TensorView>& tensors,
                                       const std::vector<std::string>& names, ReduceOp op,
                                       double prescale_factor, double postscale_factor,
                                       const ProcessSet& process_set) {
  HVD_CHECK_EQ(tensors.size(), names.size(), InvalidArgument,
               "allreduce_async_many: need a name for each tensor");
  std::vector<Request> requests(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    requests[i].op_type = OpType::kAllreduce;
    requests[i].name = names[i];
    requests[i].reduce_op = op;
    requests[i].prescale_factor = prescale_factor;
    requests[i].postscale_factor = postscale_factor;
  }
  return current()->submit_each(std::move(requests), tensors, process_set);
}

Work allreduce_async(const TensorView& tensor, const std::string& name, ReduceOp op,
                     double prescale_factor, double postscale_factor,
                     const ProcessSet& process_set) {
  return allreduce_async(tensor, tensor, name, op, prescale_factor, postscale_factor, process_set);
}

void allreduce(const TensorView& input, const TensorView& output, const std::string& name,
               ReduceOp op, double prescale_factor, double postscale_factor,
               const ProcessSet& process_set, std::optional<std::chrono::milliseconds> timeout) {
  current()->run_blocking(
      request_of(OpType::kAllreduce, name, op, 0, prescale_factor, postscale_factor), input, output,
      process_set, timeout);
}

void allreduce(const TensorView& tensor, const std::string& name, ReduceOp op,
               double prescale_factor, double postscale_factor, const ProcessSet& process_set,
               std::optional<std::chrono::milliseconds> timeout) {
  allreduce(tensor, tensor, name, op, prescale_factor, postscale_factor, process_set, timeout);
}

Work allgather_async(const TensorView& input, const std::string& name,
                     const ProcessSet& process_set) {
  return submit(process_set, OpType::kAllgather, name, input, input);
}

Tensor allgather(const TensorView& input, const std::string& name, const ProcessSet& process_set) {
  return allgather_async(input, name, process_set).output();
}

Work broadcast_async(const TensorView& tensor, int root_rank, const std::string& name,
                     const ProcessSet& process_set) {
  return submit(process_set, OpType::kBroadcast, name, tensor, tensor, ReduceOp::kSum, root_rank);
}

void broadcast(const TensorView& tensor, int root_rank, const std::string& name,
               const ProcessSet& process_set) {
  broadcast_async(tensor, root_rank, name, process_set).wait();
}

Work alltoall_async(const TensorView& input, const std::vector<std::int64_t>& splits,
                    const std::string& name, const ProcessSet& process_set) {
  Request request;
  request.op_type = OpType::kAlltoall;
  request.name = name;
  request.splits = splits;
  return current()->submit(std::move(request), input, input, process_set);
}

Tensor alltoall(const TensorView& input, const std::vector<std::int64_t>& splits,
                const std::string& name, std::vector<std::int64_t>* received_splits,
                const ProcessSet& process_set) {
  Work work = alltoall_async(input, splits, name, process_set);
  Tensor output = work.output();
  if (received_splits) *received_splits = work.received_splits();
  return output;
}

Work reducescatter_async(const TensorView& input, const std::string& name, ReduceOp op,
                         double prescale_factor, double postscale_factor,
                         const ProcessSet& process_set) {
  return submit(process_set, OpType::kReducescatter, name, input, input, op, 0, prescale_factor,
                postscale_factor);
}

Tensor reducescatter(const TensorView& input, const std::string& name, ReduceOp op,
                     double prescale_factor, double postscale_factor,
                     const ProcessSet& process_set) {
  return reducescatter_async(input, name, op, prescale_factor, postscale_factor, process_set)
      .output();
}

namespace {

std::vector<Work> submit_group(const ProcessSet& process_set, OpType op_type,
                               const std::string& name, const std::vector<TensorView>& inputs,
                               const std::vector<TensorView>& outputs, ReduceOp op = ReduceOp::kSum,
                               double prescale = 1.0, double postscale = 1.0) {
  Request request;
  request.op_type = op_type;
  request.name = name;
  request.reduce_op = op;
  request.prescale_factor = prescale;
  request.postscale_factor = postscale;
  return current()->submit_group(request, inputs, outputs, process_set);
}

// Waits for every member (so none is left running on the caller's
// buffers), then rethrows the first member's error.
void wait_all(std::vector<Work>& works) {
  std::exception_ptr first;
  for (Work& work : works) {
    try {
      work.wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

std::vector<Tensor> outputs_of(std::vector<Work>& works) {
  wait_all(works);
  std::vector<Tensor> outputs;
  outputs.reserve(works.size());
  for (Work& work : works) outputs.push_back(work.output());
  return outputs;
}

}  // namespace

std::vector<Work> grouped_allreduce_async(const std::vector<TensorView>& tensors,
                                          const std::string& name, ReduceOp op,
                                          double prescale_factor, double postscale_factor,
                                          const ProcessSet& process_set) {
  return submit_group(process_set, OpType::kAllreduce, name, tensors, tensors, op, prescale_factor,
                      postscale_factor);
}

std::vector<Work> grouped_allreduce_async(const std::vector<TensorView>& inputs,
                                          const std::vector<TensorView>& outputs,
                                          const std::string& name, ReduceOp op,
                                          double prescale_factor, double postscale_factor,
                                          const ProcessSet& process_set) {
  return submit_group(process_set, OpType::kAllreduce, name, inputs, outputs, op, prescale_factor,
                      postscale_factor);
}

void grouped_allreduce(const std::vector<TensorView>& tensors, const std::string& name, ReduceOp op,
                       double prescale_factor, double postscale_factor,
                       const ProcessSet& process_set) {
  auto works =
      grouped_allreduce_async(tensors, name, op, prescale_factor, postscale_factor, process_set);
  wait_all(works);
}

void grouped_allreduce(const std::vector<TensorView>& inputs,
                       const std::vector<TensorView>& outputs, const std::string& name, ReduceOp op,
                       double prescale_factor, double postscale_factor,
                       const ProcessSet& process_set) {
  auto works = grouped_allreduce_async(inputs, outputs, name, op, prescale_factor, postscale_factor,
                                       process_set);
  wait_all(works);
}

std::vector<Work> grouped_allgather_async(const std::vector<TensorView>& inputs,
                                          const std::string& name, const ProcessSet& process_set) {
  return submit_group(process_set, OpType::kAllgather, name, inputs, inputs);
}

std::vector<Tensor> grouped_allgather(const std::vector<TensorView>& inputs,
                                      const std::string& name, const ProcessSet& process_set) {
  auto works = grouped_allgather_async(inputs, name, process_set);
  return outputs_of(works);
}

std::vector<Work> grouped_reducescatter_async(const std::vector<TensorView>& inputs,
                                              const std::string& name, ReduceOp op,
                                              double prescale_factor, double postscale_factor,
                                              const ProcessSet& process_set) {
  return submit_group(process_set, OpType::kReducescatter, name, inputs, inputs, op,
                      prescale_factor, postscale_factor);
}

std::vector<Tensor> grouped_reducescatter(const std::vector<TensorView>& inputs,
                                          const std::string& name, ReduceOp op,
                                          double prescale_factor, double postscale_factor,
                                          const ProcessSet& process_set) {
  auto works =
      grouped_reducescatter_async(inputs, name, op, prescale_factor, postscale_factor, process_set);
  return outputs_of(works);
}

void barrier(const ProcessSet& process_set) {
  TensorView nothing(nullptr, DataType::kUInt8, {0});
  current()->run_blocking(request_of(OpType::kBarrier, ""), nothing, nothing, process_set);
}

int join() {
  TensorView nothing(nullptr, DataType::kUInt8, {0});
  Work work = submit(global_process_set(), OpType::kJoin, "join", nothing, nothing);
  work.wait();
  return *work.output().data_as<std::int32_t>();
}

void start_timeline(const std::string& path, bool mark_cycles) {
  current()->start_timeline(path, mark_cycles);
}

void stop_timeline() { current()->stop_timeline(); }

std::string dump_flight_recorder(const std::string& reason) {
  return current()->dump_flight_recorder(reason);
}

}  // namespace hvd
