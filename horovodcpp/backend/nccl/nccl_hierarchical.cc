#include "backend/nccl/nccl_hierarchical.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "backend/nccl/nccl_backend.h"
#include "backend/nccl/nccl_types.h"
#include "base/check.h"
#include "core/device/batched_copy_plan.h"
#include "core/diagnostics/logging.h"
#include "core/execution/hierarchical_allreduce_plan.h"
#include "core/negotiation/root_decides.h"
#include "core/process_sets/host_layout.h"
#include "core/process_sets/internal_set_ids.h"
#include "gpu/batched_copy.h"
#include "gpu/cuda_check.h"

namespace hvd {

HierarchicalAllreduce::HierarchicalAllreduce(std::unique_ptr<Controller> host, Transport cross)
    : host_(std::move(host)), cross_(std::move(cross)) {
  HVD_CHECK(host_ && cross_.backend, InvalidArgument,
            "hierarchical allreduce needs a host controller and a cross-host transport");
}

HierarchicalAllreduce::~HierarchicalAllreduce() {
  if (communicator_) {
    // Copies and collectives still queued use the scratch and pinned memory.
    try {
      communicator_->synchronize();
    } catch (...) {
      // Aborted (or timed out and now aborted): its kernels are gone; the
      // copies on the stream finish on their own.
      cudaSetDevice(device_);
      cudaStreamSynchronize(communicator_->stream());
    }
    scratch_.release(communicator_->stream());
  }
  // shard_ (pinned) is freed after this body; the stream is idle by now.
}

std::shared_ptr<NcclCommunicator> HierarchicalAllreduce::communicator(int device) {
  if (!communicator_) {
    communicator_ = std::make_shared<NcclCommunicator>(*host_, device, nccl_timeout_from_env());
    device_ = device;
  }
  return communicator_;
}

void HierarchicalAllreduce::allreduce(GpuEvents& events, int device,
                                      const std::vector<const TensorEntry*>& group, int set_size) {
  HVD_CHECK(!broken_, RankFailure,
            "hierarchical allreduce: an earlier one failed; the ranks are no longer in step");
  // Unsupported dtype (int16/uint16): refused before anything is queued,
  // alike on every rank, as the flat path does.
  nccl_reduction_type(group.front()->request.dtype);
  communicator(device);
  HVD_CHECK_EQ(device, device_, InvalidArgument,
               "CUDA tensors of one rank must all be on the same GPU (one GPU per rank)");
  try {
    run(events, group, set_size);
  } catch (...) {
    // Nobody must wait for this rank: its host peers' NCCL calls fail once
    // the communicator is aborted, its cross-host peers see the connections
    // of the closed transport go.
    broken_ = true;
    communicator_->abort("a hierarchical allreduce failed on this rank");
    cross_ = Transport{};
    throw;
  }
}

void HierarchicalAllreduce::run(GpuEvents& events, const std::vector<const TensorEntry*>& group,
                                int set_size) {
  const Request& request = group.front()->request;
  const DataType dtype = request.dtype;
  const std::size_t element = dtype_size(dtype);
  const bool average = request.reduce_op == ReduceOp::kAverage;
  const ReduceOp op = average ? ReduceOp::kSum : request.reduce_op;
  const CopyScale prescale{1.0, request.prescale_factor};
  const CopyScale postscale{average ? double(set_size) : 1.0, request.postscale_factor};
  set_cuda_device(device_);
  cudaStream_t stream = communicator_->stream();

  const GroupPieces pieces = group_pieces(group);
  const std::size_t total = pieces.total;
  if (total == 0) return;  // nothing to reduce; completion is recorded by the caller
  const ShardPlan plan = plan_shards(total, communicator_->size(), communicator_->rank());
  const std::size_t shard_bytes = plan.shard * element;

  // 1. After each tensor's producer: pack (prescaled) into the padded
  //    scratch buffer. Zeroed first: the padding (reduced, never read back)
  //    and, on a joined rank, the whole buffer (packing skips its zeros).
  for (const TensorEntry* entry : group) {
    if (entry->ready_event) events.stream_wait(device_, stream, entry->ready_event.get());
  }
  // Grown by doubling in whole MiB: few reallocations while groups grow.
  const std::size_t bytes = plan.padded * element;
  auto* buffer = static_cast<unsigned char*>(
      scratch_.reserve(grown_capacity(scratch_.capacity(), bytes), stream));
  const std::size_t zero_from = pieces.zeros ? 0 : total;
  if (plan.padded > zero_from) {
    HVD_CUDA_CHECK(cudaMemsetAsync(buffer + zero_from * element, 0,
                                   (plan.padded - zero_from) * element, stream));
  }
  launch_batched_copies(pack_tasks(pieces.inputs, buffer, element), dtype, prescale, stream);

  // 2. Reduce-scatter inside the host, in place: this rank's shard lands at
  //    its offset (NCCL's in-place layout).
  NcclBackend local(communicator_);
  unsigned char* mine = buffer + plan.offset * element;
  const std::vector<std::size_t> shards(static_cast<std::size_t>(communicator_->size()),
                                        plan.shard);
  local.reducescatter(buffer, mine, shards, dtype, op);

  // 3. The shard to pinned memory. A growing pinned buffer frees the old
  //    one: the previous call's copy back out of it must be done first.
  if (shard_bytes > shard_.capacity()) communicator_->synchronize();
  unsigned char* host = shard_.reserve(shard_bytes);
  HVD_CUDA_CHECK(cudaMemcpyAsync(host, mine, shard_bytes, cudaMemcpyDeviceToHost, stream));
  // The one wait on the GPU (bounded; aborts on an NCCL error or timeout).
  communicator_->synchronize();

  // 4. Across hosts on the CPU transport (float16/bfloat16 included).
  cross_.backend->allreduce(host, plan.shard, dtype, op);

  // 5. Back to the device (the host buffer is rewritten only after the next
  //    call's synchronize, so after this copy), allgather inside the host,
  //    unpack (Average and postscale folded in).
  HVD_CUDA_CHECK(cudaMemcpyAsync(mine, host, shard_bytes, cudaMemcpyHostToDevice, stream));
  local.allgatherv(mine, buffer, shards, dtype);
  launch_batched_copies(unpack_tasks(buffer, pieces.outputs, element), dtype, postscale, stream);
}

std::unique_ptr<HierarchicalAllreduce> maybe_hierarchical_allreduce(Controller& controller,
                                                                    ProcessSetChannel* channel,
                                                                    bool wanted) {
  if (channel == nullptr) return nullptr;
  const Topology& topology = controller.topology();
  // One host (every rank sees local_size == size alike): nothing to decide.
  if (topology.size < 2 || topology.local_size == topology.size) {
    if (wanted && topology.rank == 0) {
      HVD_LOG(Warning) << "HOROVODCPP_HIERARCHICAL_ALLREDUCE=1 is ignored: the job runs on one "
                          "host; CUDA allreduce uses one NCCL communicator";
    }
    return nullptr;
  }
  // Rank 0's setting decides for all, as HOROVODCPP_SHM.
  if (!root_decides(controller, wanted)) return nullptr;
  const HostLayout layout = host_layout(channel->host_keys(), topology.rank);
  std::vector<std::size_t> per_host;
  for (const std::vector<int>& ranks : layout.hosts) per_host.push_back(ranks.size());
  // The same on every rank (the layout is the job's).
  std::string problem = hierarchical_allreduce_problem(per_host);
  // Every rank must agree, or none goes hierarchical.
  const bool able = every_rank_can_split_hosts(layout, controller, *channel,
                                               "hierarchical allreduce is not possible on this "
                                               "rank");
  if (problem.empty() && !able) problem = "some rank cannot create sub-transports";
  if (!problem.empty()) {
    if (topology.rank == 0) {
      HVD_LOG(Warning) << "HOROVODCPP_HIERARCHICAL_ALLREDUCE=1 is ignored: " << problem
                       << "; CUDA allreduce uses one NCCL communicator over all ranks";
    }
    return nullptr;
  }
  // Every rank creates every sub-transport in the same order (collective).
  std::unique_ptr<Controller> host;
  for (std::size_t h = 0; h < layout.hosts.size(); ++h) {
    Transport made =
        channel->create_transport(kGpuHostSetId - static_cast<int>(h), layout.hosts[h]);
    if (static_cast<int>(h) == layout.host) host = std::move(made.controller);
  }
  Transport cross;
  for (std::size_t l = 0; l < per_host.front(); ++l) {
    Transport made = channel->create_transport(kGpuCrossSetId - static_cast<int>(l),
                                               layout.cross(static_cast<int>(l)));
    if (static_cast<int>(l) == layout.local) cross = std::move(made);
  }
  if (topology.rank == 0) {
    HVD_LOG(Info) << "hierarchical allreduce of CUDA tensors: " << per_host.size() << " hosts of "
                  << per_host.front()
                  << " ranks; NCCL inside each host, the CPU transport across hosts";
  }
  return std::make_unique<HierarchicalAllreduce>(std::move(host), std::move(cross));
}

}  // namespace hvd
