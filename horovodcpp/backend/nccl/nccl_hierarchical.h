// HierarchicalAllreduce: allreduce of CUDA tensors in three stages, as
// Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE: an NCCL reduce-scatter inside
// the host leaves each local rank one shard of the (padded) fused buffer,
// the shard is copied to pinned host memory and allreduced across hosts
// on the CPU transport (MPI or Gloo) of the ranks with the same local index,
// copied back, and an NCCL allgather inside the host reassembles the buffer.
//
// Its transports come from the job's ProcessSetChannel (built on the API
// thread at init, under ids of their own); the host's NCCL communicator is
// created at the first hierarchical allreduce (every rank of the host
// reaches it at the same response). Everything runs on that communicator's
// stream; the coordinator waits only for the shard's copy to the host.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "backend/nccl/nccl_communicator.h"
#include "core/device/gpu_events.h"
#include "core/execution/transport.h"
#include "core/negotiation/tensor_queue.h"
#include "core/process_sets/process_set_channel.h"
#include "gpu/device_tensor.h"
#include "gpu/staged_operations.h"  // PinnedBuffer

namespace hvd {

class HierarchicalAllreduce {
 public:
  // `host`: controller over this host's ranks; `cross`: transport over the
  // ranks with this rank's local index on every host.
  HierarchicalAllreduce(std::unique_ptr<Controller> host, Transport cross);
  // Waits (bounded by the NCCL timeout) for the stream before freeing the
  // scratch and pinned memory; never throws.
  ~HierarchicalAllreduce();
  HierarchicalAllreduce(const HierarchicalAllreduce&) = delete;
  HierarchicalAllreduce& operator=(const HierarchicalAllreduce&) = delete;

  // The host's communicator on `device`, created on first use.
  std::shared_ptr<NcclCommunicator> communicator(int device);
  bool has_communicator() const { return communicator_ != nullptr; }

  // Queues the group's allreduce (see above) on the host communicator's
  // stream, after each entry's ready event; the caller records completion
  // on stream() afterwards. Sum/Min/Max/Product (Average: Sum, then divided
  // by `set_size`, joined ranks included), prescale and postscale as the flat NCCL path.
  // After a failure the ranks are out of step: the host communicator is
  // aborted and the cross transport closed so no peer waits for this rank,
  // and every later call throws RankFailure.
  void allreduce(GpuEvents& events, int device, const std::vector<const TensorEntry*>& group,
                 int set_size);
  cudaStream_t stream() const { return communicator_ ? communicator_->stream() : nullptr; }

 private:
  void run(GpuEvents& events, const std::vector<const TensorEntry*>& group, int set_size);

  std::unique_ptr<Controller> host_;
  Transport cross_;
  std::shared_ptr<NcclCommunicator> communicator_;
  int device_ = -1;
  bool broken_ = false;
  StreamBuffer scratch_;  // the padded fused buffer, on the stream
  PinnedBuffer shard_;    // this rank's shard on the host
};

// When rank 0 is `wanted` (HOROVODCPP_HIERARCHICAL_ALLREDUCE=1) and the job spans
// several hosts with equally many ranks: the transports, built through
// `channel` (collective over every rank of the job, API thread). Otherwise
// null (with a warning on rank 0 when it was asked for). `channel` null
// (a user process set): null.
std::unique_ptr<HierarchicalAllreduce> maybe_hierarchical_allreduce(Controller& controller,
                                                                    ProcessSetChannel* channel,
                                                                    bool wanted);

}  // namespace hvd
