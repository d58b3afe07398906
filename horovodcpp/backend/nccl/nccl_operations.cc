#include "backend/nccl/nccl_operations.h"

#include <utility>

#include "core/batched_copy_plan.h"
#include "core/device_completion.h"
#include "gpu/batched_copy.h"
#include "gpu/cuda_check.h"
#include "gpu/device_tensor.h"

namespace hvd {
namespace {

// Queues dst = src / divisor * factor for every (src, dst, count) task.
void copy_all(const std::vector<CopyTask>& tasks, DataType dtype, CopyScale scale,
              cudaStream_t stream) {
  for (const CopyLaunch& launch : plan_batched_copies(tasks, dtype_size(dtype))) {
    launch_batched_copy(launch, dtype, scale, stream);
  }
}

}  // namespace

NcclOperations::NcclOperations(Controller& controller) : controller_(controller) {}

NcclOperations::~NcclOperations() {
  poller_.reset();  // fails what is pending before the communicator goes
  if (fusion_buffer_) cudaFreeAsync(fusion_buffer_, communicator_->stream());
  backend_.reset();
  communicator_.reset();
}

std::shared_ptr<void> NcclOperations::record_ready(const TensorView& tensor) {
  // No device at all: nothing to order against, and the collective fails
  // alike on every rank when it runs (or negotiation finds a mismatch first).
  if (cuda_device_count() == 0) return nullptr;
  GpuEvents::Event event = events_.record(tensor.device.index, tensor.stream);
  return std::shared_ptr<void>(event, [this](void* e) { events_.release(e); });
}

void NcclOperations::ensure(int device) {
  if (communicator_) {
    HVD_CHECK_EQ(device, device_, InvalidArgument,
                 "CUDA tensors of one rank must all be on the same GPU (one GPU per rank)");
    return;
  }
  device_ = device;
  communicator_ = std::make_shared<NcclCommunicator>(controller_, device, nccl_timeout_from_env());
  backend_ = std::make_unique<NcclBackend>(communicator_);
  std::shared_ptr<NcclCommunicator> communicator = communicator_;
  // A peer that died or never comes: abort instead of waiting forever.
  poller_ = std::make_unique<CompletionPoller>(
      events_, [communicator](std::chrono::steady_clock::duration oldest) {
        communicator->check();
        if (oldest > communicator->timeout()) {
          communicator->abort("a collective did not complete within the timeout");
          HVD_THROW(Timeout, "NCCL collective did not complete within "
                                 << communicator->timeout().count()
                                 << " ms (a peer may have died); the communicator was aborted");
        }
      });
}

void NcclOperations::wait_ready(const std::vector<const TensorEntry*>& group) {
  ensure(group.front()->request.device.index);
  HVD_CUDA_CHECK(cudaSetDevice(device_));
  for (const TensorEntry* entry : group) {
    if (entry->ready_event) events_.stream_wait(device_, communicator_->stream(), entry->ready_event.get());
  }
}

void* NcclOperations::fusion_buffer(std::size_t bytes) {
  if (bytes > fusion_bytes_) {
    // Stream-ordered: freed after the work already queued that uses it,
    // and the host never waits.
    cudaStream_t stream = communicator_->stream();
    if (fusion_buffer_) HVD_CUDA_CHECK(cudaFreeAsync(fusion_buffer_, stream));
    fusion_buffer_ = nullptr;
    fusion_bytes_ = 0;
    HVD_CUDA_CHECK(cudaMallocAsync(&fusion_buffer_, bytes, stream));
    fusion_bytes_ = bytes;
  }
  return fusion_buffer_;
}

void NcclOperations::allreduce(const std::vector<const TensorEntry*>& group, int contributors) {
  const Request& request = group.front()->request;
  const DataType dtype = request.dtype;
  const bool average = request.reduce_op == ReduceOp::kAverage;
  const ReduceOp op = average ? ReduceOp::kSum : request.reduce_op;
  const CopyScale prescale{1.0, request.prescale_factor};
  const CopyScale postscale{average ? double(contributors) : 1.0, request.postscale_factor};
  wait_ready(group);
  cudaStream_t stream = communicator_->stream();
  if (group.size() == 1) {
    // Alone: reduce in the output itself.
    const TensorEntry& entry = *group.front();
    const std::uint64_t n = entry.input.num_elements();
    if (entry.input.data != entry.output.data || !prescale.identity()) {
      copy_all({{entry.input.data, entry.output.data, n}}, dtype, prescale, stream);
    }
    backend_->allreduce(entry.output.data, n, dtype, op);
    if (!postscale.identity()) {
      copy_all({{entry.output.data, entry.output.data, n}}, dtype, postscale, stream);
    }
  } else {
    std::vector<std::pair<const void*, std::uint64_t>> inputs;
    std::vector<std::pair<void*, std::uint64_t>> outputs;
    std::uint64_t total = 0;
    for (const TensorEntry* entry : group) {
      const std::uint64_t n = entry->input.num_elements();
      inputs.emplace_back(entry->input.data, n);
      outputs.emplace_back(entry->output.data, n);
      total += n;
    }
    void* buffer = fusion_buffer(total * dtype_size(dtype));
    copy_all(pack_tasks(inputs, buffer, dtype_size(dtype)), dtype, prescale, stream);
    backend_->allreduce(buffer, total, dtype, op);
    copy_all(unpack_tasks(buffer, outputs, dtype_size(dtype)), dtype, postscale, stream);
  }
  complete_when_done(events_, *poller_, device_, communicator_->stream(), group);
}

void NcclOperations::broadcast(const TensorEntry& entry) {
  wait_ready({&entry});
  backend_->broadcast(entry.input.data, entry.input.num_elements(), entry.input.dtype,
                      entry.request.root_rank);
  complete_when_done(events_, *poller_, device_, communicator_->stream(), {&entry});
}

void NcclOperations::allgather(const TensorEntry& entry, const ResultPlan& plan) {
  wait_ready({&entry});
  Tensor output = device_tensor(device_, entry.input.dtype, plan.shape);
  backend_->allgatherv(entry.input.data, output.data(), plan.counts, entry.input.dtype);
  complete_when_done(events_, *poller_, device_, communicator_->stream(), {&entry}, output);
}

void NcclOperations::alltoall(const TensorEntry& entry, const ResultPlan& plan) {
  wait_ready({&entry});
  Tensor output = device_tensor(device_, entry.input.dtype, plan.shape);
  backend_->alltoallv(entry.input.data, plan.send_counts, output.data(), plan.counts,
                      entry.input.dtype);
  complete_when_done(events_, *poller_, device_, communicator_->stream(), {&entry}, output,
                     plan.received_splits);
}

// NCCL may clobber its input: reduce a prescaled copy in the fusion buffer,
// never the caller's tensor; Average and postscale in place afterwards.
void NcclOperations::reducescatter(const TensorEntry& entry, const ResultPlan& plan,
                                   double divisor) {
  const Request& request = entry.request;
  const DataType dtype = request.dtype;
  const std::uint64_t n = entry.input.num_elements();
  wait_ready({&entry});
  cudaStream_t stream = communicator_->stream();
  void* scratch = fusion_buffer(n * dtype_size(dtype));
  copy_all({{entry.input.data, scratch, n}}, dtype, CopyScale{1.0, request.prescale_factor},
           stream);
  Tensor output = device_tensor(device_, dtype, plan.shape);
  backend_->reducescatter(scratch, output.data(), plan.counts, dtype, ReduceOp::kSum);
  const CopyScale postscale{divisor, request.postscale_factor};
  const std::uint64_t mine = static_cast<std::uint64_t>(output.num_elements());
  if (!postscale.identity()) {
    copy_all({{output.data(), output.data(), mine}}, dtype, postscale, stream);
  }
  complete_when_done(events_, *poller_, device_, stream, {&entry}, output);
}

}  // namespace hvd
