// NcclOperations: CUDA tensors' collectives over NCCL for one process set.
// On the coordinator thread it makes the NCCL stream wait for each tensor's
// ready event, packs fused tensors into a device fusion buffer with the
// batched copy kernel (prescale folded in), runs the collective, unpacks
// (Average and postscale folded in), records a completion event, makes
// each caller's stream wait for it, and hands it to a CompletionPoller that
// completes the Works: no step waits on the GPU. Allgather, alltoall and
// reducescatter write into device memory they allocate on the tensor's GPU,
// which becomes the Work's output.
#pragma once

#include <memory>
#include <mutex>

#include "backend/nccl/nccl_backend.h"
#include "core/completion_poller.h"
#include "core/device_operations.h"
#include "gpu/cuda_events.h"

namespace hvd {

class NcclOperations : public DeviceOperations {
 public:
  // The communicator is created at the first CUDA collective (every rank
  // of the set reaches it at the same response), over `controller`.
  explicit NcclOperations(Controller& controller);
  ~NcclOperations() override;

  const char* name() const override { return "nccl"; }
  std::shared_ptr<void> record_ready(const TensorView& tensor) override;
  void allreduce(const std::vector<const TensorEntry*>& group, int contributors) override;
  void broadcast(const TensorEntry& entry) override;
  void allgather(const TensorEntry& entry, const ResultPlan& plan) override;
  void alltoall(const TensorEntry& entry, const ResultPlan& plan) override;
  void reducescatter(const TensorEntry& entry, const ResultPlan& plan, double divisor) override;

 private:
  // Creates the communicator on `device` at first use; one GPU per rank.
  void ensure(int device);
  // The NCCL stream waits for every entry's ready event.
  void wait_ready(const std::vector<const TensorEntry*>& group);
  void* fusion_buffer(std::size_t bytes);

  Controller& controller_;
  CudaEvents events_;
  int device_ = -1;
  std::shared_ptr<NcclCommunicator> communicator_;
  std::unique_ptr<NcclBackend> backend_;
  std::unique_ptr<CompletionPoller> poller_;
  void* fusion_buffer_ = nullptr;  // device memory, grows, reused
  std::size_t fusion_bytes_ = 0;
};

}  // namespace hvd
