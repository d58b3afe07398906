// NcclOperations: CUDA tensors' collectives over NCCL for one process set.
// On the coordinator thread it makes the NCCL stream wait for each tensor's
// ready event, packs fused tensors into a device fusion buffer with the
// batched copy kernel (prescale folded in), runs the collective, unpacks
// (Average and postscale folded in), records a completion event and
// completes the Works with it (a caller's wait() makes its stream wait for
// the event); a CompletionPoller finishes them once the GPU has run it: no
// step waits on the GPU. Allgather, alltoall and
// reducescatter write into device memory they allocate on the tensor's GPU,
// which becomes the Work's output. With a HierarchicalAllreduce (the job's
// set, HOROVODCPP_HIERARCHICAL_ALLREDUCE) allreduce runs through it; the
// flat communicator is then created only when another collective needs it.
// The timeline shows each collective per tensor (NCCL_ALLREDUCE,
// NCCL_HIERARCHICAL_ALLREDUCE, NCCL_BROADCAST, ...) from its queueing to the
// poller seeing it done; packing and unpacking fused tensors are inside it.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "backend/nccl/nccl_backend.h"
#include "backend/nccl/nccl_hierarchical.h"
#include "core/device/completion_poller.h"
#include "core/device/device_operations.h"
#include "gpu/cuda_events.h"
#include "gpu/device_tensor.h"

namespace hvd {

class NcclOperations : public DeviceOperations {
 public:
  // The communicator is created at the first CUDA collective that needs it
  // (every rank of the set reaches it at the same response), over
  // `controller`. `hierarchical` (may be null) runs allreduce instead.
  // `timeline` may be null.
  NcclOperations(Controller& controller, std::unique_ptr<HierarchicalAllreduce> hierarchical,
                 Timeline* timeline);
  ~NcclOperations() override;

  const char* name() const override { return "nccl"; }
  std::shared_ptr<void> record_ready(const TensorView& tensor) override;
  void allreduce(const std::vector<const TensorEntry*>& group, int set_size) override;
  void broadcast(const TensorEntry& entry) override;
  void allgather(const TensorEntry& entry, const ResultPlan& plan) override;
  void alltoall(const TensorEntry& entry, const ResultPlan& plan) override;
  void reducescatter(const TensorEntry& entry, const ResultPlan& plan, double divisor) override;

 private:
  // The communicators the poller checks (and aborts on a timeout); the
  // poller thread reads the list while the coordinator adds to it.
  struct Watched {
    std::mutex mutex;
    std::vector<std::shared_ptr<NcclCommunicator>> communicators;
    void add(std::shared_ptr<NcclCommunicator> communicator);
    std::vector<std::shared_ptr<NcclCommunicator>> list();
  };

  // Fixes this rank's GPU and starts the poller at first use; one GPU per rank.
  void ensure(int device);
  // This rank's GPU for `group`: its tensors'. A joined rank's zeros alone:
  // the GPU this rank used before, else local_rank modulo the visible GPUs
  // (the GPU of the usual torch.cuda.set_device(hvd.local_rank())); -1 if
  // it sees none (the communicator's creation then fails, after the id
  // exchange).
  int device_for(const std::vector<const TensorEntry*>& group) const;
  // The GPU this rank's communicators go on: the one fixed by ensure, else
  // `device`.
  int rank_device(int device) const;
  // The flat communicator over the set, created at first use on the
  // group's GPU; its stream waits for every entry's ready event.
  void wait_ready(const std::vector<const TensorEntry*>& group);
  // Work queued on stream `later` from now on starts after what `earlier`
  // has queued so far. The flat and the host communicator run one after the
  // other, never side by side: NCCL kernels of two communicators on one GPU
  // may deadlock when GPUs schedule them in different orders.
  void order_after(void* later, void* earlier);

  Controller& controller_;
  Timeline* timeline_;
  std::shared_ptr<CudaEvents> events_ = std::make_shared<CudaEvents>();
  int device_ = -1;
  std::unique_ptr<HierarchicalAllreduce> hierarchical_;
  std::shared_ptr<Watched> watched_ = std::make_shared<Watched>();
  std::shared_ptr<NcclCommunicator> communicator_;
  std::unique_ptr<NcclBackend> backend_;
  std::unique_ptr<CompletionPoller> poller_;
  StreamBuffer fusion_;  // on the flat communicator's stream
};

}  // namespace hvd
