#include "backend/nccl/nccl_operations.h"

#include <utility>

#include "core/device/batched_copy_plan.h"
#include "core/device/device_completion.h"
#include "core/diagnostics/nvtx_ranges.h"
#include "core/execution/timeline_span.h"
#include "gpu/batched_copy.h"
#include "gpu/cuda_check.h"
#include "gpu/device_scope.h"
#include "gpu/device_tensor.h"

namespace hvd {

NcclOperations::NcclOperations(Controller& controller,
                               std::unique_ptr<HierarchicalAllreduce> hierarchical,
                               Timeline* timeline)
    : controller_(controller), timeline_(timeline), hierarchical_(std::move(hierarchical)) {}

NcclOperations::~NcclOperations() {
  poller_.reset();  // fails what is pending before the communicators go
  watched_.reset();
  if (communicator_) fusion_.release(communicator_->stream());
  backend_.reset();
  communicator_.reset();
  hierarchical_.reset();  // waits for its stream before freeing its memory
}

void NcclOperations::order_after(void* later, void* earlier) {
  const std::shared_ptr<void> event = record_shared(events_, device_, earlier);
  events_->stream_wait(device_, later, event.get());  // queued: the event may go
}

void NcclOperations::Watched::add(std::shared_ptr<NcclCommunicator> communicator) {
  std::lock_guard<std::mutex> lock(mutex);
  communicators.push_back(std::move(communicator));
}

std::vector<std::shared_ptr<NcclCommunicator>> NcclOperations::Watched::list() {
  std::lock_guard<std::mutex> lock(mutex);
  return communicators;
}

std::shared_ptr<void> NcclOperations::record_ready(const TensorView& tensor) {
  // No device at all: nothing to order against, and the collective fails
  // alike on every rank when it runs (or negotiation finds a mismatch first).
  if (cuda_device_count() == 0) return nullptr;
  return record_shared(events_, tensor.device.index, tensor.stream);
}

void NcclOperations::ensure(int device) {
  if (poller_) {
    HVD_CHECK_EQ(device, device_, InvalidArgument,
                 "CUDA tensors of one rank must all be on the same GPU (one GPU per rank)");
    return;
  }
  device_ = device;
  std::shared_ptr<Watched> watched = watched_;
  // A peer that died or never comes: abort instead of waiting forever.
  poller_ = std::make_unique<CompletionPoller>(
      *events_, [watched](std::chrono::steady_clock::duration oldest) {
        const std::vector<std::shared_ptr<NcclCommunicator>> communicators = watched->list();
        for (const auto& communicator : communicators) communicator->check();
        for (const auto& communicator : communicators) {
          if (oldest <= communicator->timeout()) continue;
          for (const auto& other : communicators) {
            other->abort("a collective did not complete within the timeout");
          }
          HVD_THROW(Timeout, "NCCL collective did not complete within "
                                 << communicator->timeout().count()
                                 << " ms (a peer may have died); the communicator was aborted");
        }
      });
}

int NcclOperations::device_for(const std::vector<const TensorEntry*>& group) const {
  for (const TensorEntry* entry : group) {
    if (!entry->joined) return entry->request.device.index;
  }
  if (device_ >= 0) return device_;
  const int count = cuda_device_count();
  return count > 0 ? controller_.topology().local_rank % count : -1;
}

int NcclOperations::rank_device(int device) const { return device_ >= 0 ? device_ : device; }

void NcclOperations::wait_ready(const std::vector<const TensorEntry*>& group) {
  const int device = device_for(group);
  // The communicator first: its id exchange must not miss a rank that fails
  // here (a GPU other than its first, none at all), or the others would
  // wait in it; a failure after the exchange is bounded by the timeout.
  if (!communicator_) {
    communicator_ = std::make_shared<NcclCommunicator>(controller_, rank_device(device),
                                                       nccl_timeout_from_env());
    backend_ = std::make_unique<NcclBackend>(communicator_);
    watched_->add(communicator_);
  }
  ensure(device);
  set_cuda_device(device_);
  if (hierarchical_ && hierarchical_->has_communicator()) {
    order_after(communicator_->stream(), hierarchical_->stream());
  }
  for (const TensorEntry* entry : group) {
    if (entry->ready_event)
      events_->stream_wait(device_, communicator_->stream(), entry->ready_event.get());
  }
}

void NcclOperations::allreduce(const std::vector<const TensorEntry*>& group, int set_size) {
  const KeepCurrentDevice keep;  // queued from the caller's thread too
  const Request& request = group.front()->request;
  const DataType dtype = request.dtype;
  const bool average = request.reduce_op == ReduceOp::kAverage;
  const ReduceOp op = average ? ReduceOp::kSum : request.reduce_op;
  const CopyScale prescale{1.0, request.prescale_factor};
  const CopyScale postscale{average ? double(set_size) : 1.0, request.postscale_factor};
  if (hierarchical_) {
    const int device = device_for(group);
    // The communicator first, as in wait_ready.
    if (!hierarchical_->has_communicator()) {
      watched_->add(hierarchical_->communicator(rank_device(device)));
    }
    ensure(device);
    set_cuda_device(device_);
    if (communicator_) order_after(hierarchical_->stream(), communicator_->stream());
    TimelineSpan span(timeline_, "NCCL_HIERARCHICAL_ALLREDUCE", group);
    hierarchical_->allreduce(*events_, device_, group, set_size);
    complete_on_stream(events_, *poller_, device_, hierarchical_->stream(), group, std::move(span));
    return;
  }
  wait_ready(group);
  TimelineSpan span(timeline_, "NCCL_ALLREDUCE", group);
  cudaStream_t stream = communicator_->stream();
  const GroupPieces pieces = group_pieces(group);
  if (group.size() == 1 && !pieces.zeros) {
    // Alone: reduce in the output itself.
    const TensorEntry& entry = *group.front();
    const std::uint64_t n = entry.input.num_elements();
    if (entry.input.data != entry.output.data || !prescale.identity()) {
      launch_batched_copies({{entry.input.data, entry.output.data, n}}, dtype, prescale, stream);
    }
    backend_->allreduce(entry.output.data, n, dtype, op);
    if (!postscale.identity()) {
      launch_batched_copies({{entry.output.data, entry.output.data, n}}, dtype, postscale, stream);
    }
  } else {
    const std::size_t bytes = pieces.total * dtype_size(dtype);
    void* buffer = fusion_.reserve(bytes, stream);
    // A joined rank's zeros are the buffer itself, zeroed on the stream
    // before NCCL reads it (packing and unpacking skip them).
    if (pieces.zeros && bytes > 0) HVD_CUDA_CHECK(cudaMemsetAsync(buffer, 0, bytes, stream));
    // Ranges over the launches (Nsight Systems projects them onto the
    // kernels); the span's range covers the whole collective.
    {
      const NvtxScope range("MEMCPY_IN_FUSION_BUFFER");
      launch_batched_copies(pack_tasks(pieces.inputs, buffer, dtype_size(dtype)), dtype, prescale,
                            stream);
    }
    backend_->allreduce(buffer, pieces.total, dtype, op);
    {
      const NvtxScope range("MEMCPY_OUT_FUSION_BUFFER");
      launch_batched_copies(unpack_tasks(buffer, pieces.outputs, dtype_size(dtype)), dtype,
                            postscale, stream);
    }
  }
  complete_on_stream(events_, *poller_, device_, communicator_->stream(), group, std::move(span));
}

void NcclOperations::broadcast(const TensorEntry& entry) {
  const KeepCurrentDevice keep;  // queued from the caller's thread too
  wait_ready({&entry});
  TimelineSpan span(timeline_, "NCCL_BROADCAST", entry);
  backend_->broadcast(entry.input.data, entry.input.num_elements(), entry.input.dtype,
                      entry.request.root_rank);
  complete_on_stream(events_, *poller_, device_, communicator_->stream(), {&entry},
                     std::move(span));
}

void NcclOperations::allgather(const TensorEntry& entry, const ResultPlan& plan) {
  const KeepCurrentDevice keep;  // queued from the caller's thread too
  wait_ready({&entry});
  TimelineSpan span(timeline_, "NCCL_ALLGATHER", entry);
  Tensor output = device_tensor(device_, entry.input.dtype, plan.shape);
  backend_->allgatherv(entry.input.data, output.data(), plan.counts, entry.input.dtype);
  complete_on_stream(events_, *poller_, device_, communicator_->stream(), {&entry}, std::move(span),
                     output);
}

void NcclOperations::alltoall(const TensorEntry& entry, const ResultPlan& plan) {
  const KeepCurrentDevice keep;  // queued from the caller's thread too
  wait_ready({&entry});
  TimelineSpan span(timeline_, "NCCL_ALLTOALL", entry);
  Tensor output = device_tensor(device_, entry.input.dtype, plan.shape);
  backend_->alltoallv(entry.input.data, plan.send_counts, output.data(), plan.counts,
                      entry.input.dtype);
  complete_on_stream(events_, *poller_, device_, communicator_->stream(), {&entry}, std::move(span),
                     output, plan.received_splits);
}

// NCCL may clobber its input: reduce a prescaled copy in the fusion buffer,
// never the caller's tensor; Average and postscale in place afterwards.
void NcclOperations::reducescatter(const TensorEntry& entry, const ResultPlan& plan,
                                   double divisor) {
  const KeepCurrentDevice keep;  // queued from the caller's thread too
  const Request& request = entry.request;
  const DataType dtype = request.dtype;
  const std::uint64_t n = entry.input.num_elements();
  wait_ready({&entry});
  TimelineSpan span(timeline_, "NCCL_REDUCESCATTER", entry);
  cudaStream_t stream = communicator_->stream();
  void* scratch = fusion_.reserve(n * dtype_size(dtype), stream);
  launch_batched_copies({{entry.input.data, scratch, n}}, dtype,
                        CopyScale{1.0, request.prescale_factor}, stream);
  Tensor output = device_tensor(device_, dtype, plan.shape);
  backend_->reducescatter(scratch, output.data(), plan.counts, dtype, ReduceOp::kSum);
  const CopyScale postscale{divisor, request.postscale_factor};
  const std::uint64_t mine = static_cast<std::uint64_t>(output.num_elements());
  if (!postscale.identity()) {
    launch_batched_copies({{output.data(), output.data(), mine}}, dtype, postscale, stream);
  }
  complete_on_stream(events_, *poller_, device_, stream, {&entry}, std::move(span), output);
}

}  // namespace hvd
