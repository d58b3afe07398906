// DeviceOperations: collectives on CUDA tensors, one per process set. Two
// kinds: device-side (NCCL), to which the executor hands the agreed
// collectives of CUDA tensors; they queue the work on the GPU, ordered
// after each tensor's ready event, make the tensor's stream wait for the
// result, and complete the Works later from a thread of their own, so the
// coordinator never waits on the GPU. Or staged (MPI, Gloo: staging()
// is not null): the executor runs the CPU backend on pinned host copies.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/check.h"
#include "core/device/host_staging.h"
#include "core/diagnostics/timeline.h"
#include "core/execution/result_plan.h"
#include "core/negotiation/controller.h"
#include "core/negotiation/tensor_queue.h"
#include "core/process_sets/process_set_channel.h"

namespace hvd {

class DeviceOperations {
 public:
  virtual ~DeviceOperations() = default;
  virtual const char* name() const = 0;  // "nccl", "gloo (staged through host memory)"

  // User thread, at submission: an event on tensor.stream marking the data
  // ready, released when the returned pointer is dropped (null when there
  // is nothing to wait for). Throws if the event cannot be recorded.
  virtual std::shared_ptr<void> record_ready(const TensorView& tensor) = 0;

  // Staged operations: the executor's CPU backend runs their collectives
  // (allreduce, broadcast below are then not called). Null: device-side.
  virtual HostStaging* staging() { return nullptr; }

  // Device-side, coordinator thread. Queue the collective (the group
  // shares dtype, op and scale factors; Average divides by `set_size`,
  // joined ranks included, as in CollectiveExecutor) and return; the Works are
  // completed or failed later. A throw means nothing was queued: the
  // caller fails the Works. Entries with `joined` set are a joined rank's
  // zeros: dtype and shape only (null data; their device is another
  // rank's), which take their place in the fused layout as zeros.
  virtual void allreduce(const std::vector<const TensorEntry*>& group, int set_size) = 0;
  virtual void broadcast(const TensorEntry& entry) = 0;
  // The same for collectives whose result (`plan.shape`, on the tensor's
  // GPU) becomes the Work's output. reducescatter: the sum over ranks,
  // prescaled, then divided by `divisor` (Average) and postscaled.
  virtual void allgather(const TensorEntry& entry, const ResultPlan& plan) {
    (void)plan;
    unsupported("allgather", entry);
  }
  virtual void alltoall(const TensorEntry& entry, const ResultPlan& plan) {
    (void)plan;
    unsupported("alltoall", entry);
  }
  virtual void reducescatter(const TensorEntry& entry, const ResultPlan& plan, double divisor) {
    (void)plan;
    (void)divisor;
    unsupported("reducescatter", entry);
  }

 private:
  [[noreturn]] void unsupported(const char* op, const TensorEntry& entry) const {
    HVD_THROW(InvalidArgument, op << " of tensor '" << entry.request.name
                                  << "': not supported yet for CUDA tensors on " << name());
  }
};

}  // namespace hvd
