// CollectiveExecutor: runs one agreed collective on this rank's buffers
// through the Backend, applying scaling and Average around it, and
// completes the tensor's Work.
#pragma once

#include <vector>

#include "core/execution/adasum.h"
#include "core/execution/backend.h"
#include "core/negotiation/controller.h"
#include "core/device/device_operations.h"
#include "core/negotiation/message.h"
#include "core/negotiation/tensor_queue.h"
#include "core/diagnostics/timeline.h"

namespace hvd {

class CollectiveExecutor {
 public:
  // `fusion_threshold`: bytes of the fusion buffer (0 disables fusion).
  // `timeline` (may be null) receives each tensor's execution phases.
  // `device` (may be null: CUDA tensors are refused) runs CUDA tensors'
  // collectives, or stages them for `backend`; they complete asynchronously.
  CollectiveExecutor(Backend& backend, const Topology& topology, Timeline* timeline,
                     DeviceOperations* device, std::size_t fusion_threshold);

  // Runs one cycle's agreed responses in order, taking their entries from
  // `queue`; allreduces that can share the fusion buffer run as one.
  // Never throws: failures go to the entries' Work.
  // Returns the bytes of this rank's tensors that the collectives moved
  // (what the autotuner measures).
  std::size_t execute_all(const std::vector<Response>& responses, TensorQueue& queue);
  void execute(const Response& response, TensorEntry entry);

  std::size_t fusion_threshold() const { return fusion_threshold_; }
  // Every rank must switch at the same cycle (they plan fusion alike).
  void set_fusion_threshold(std::size_t bytes) { fusion_threshold_ = bytes; }

 private:
  // One allreduce through the backend for the whole group (same dtype, op
  // and scale factors): packed into the fusion buffer when it has several.
  // Average divides by the set's size, joined ranks (their zeros) included,
  // as Horovod does.
  void allreduce(const std::vector<const TensorEntry*>& group);
  // The reduction itself on the group's elements packed in `buffer`: the
  // backend's allreduce, or Adasum with coefficients per tensor.
  void reduce_packed(const std::vector<const TensorEntry*>& group, void* buffer, DataType dtype,
                     ReduceOp op);
  // The response's collective on the CPU backend (CPU tensors, or staged
  // copies of CUDA tensors; several only for a fused allreduce), traced.
  // Returns the result the library allocates, if any.
  Tensor run_on_backend(const Response& response, const std::vector<const TensorEntry*>& group,
                        std::vector<std::int64_t>& received_splits);
  TensorEntry zeros_for(const Request& agreed);
  bool stages_in_float32(DataType dtype, ReduceOp op) const;
  // Shapes and counts of the collectives with a library-allocated result,
  // the same for CPU and CUDA tensors.
  ResultPlan gather_plan(const TensorEntry& entry, const Response& response) const;
  ResultPlan exchange_plan(const TensorEntry& entry, const Response& response) const;
  ResultPlan scatter_plan(const TensorEntry& entry) const;
  double scatter_divisor(const Request& request) const;  // Average: the set's size
  Tensor allgather(const TensorEntry& entry, const ResultPlan& plan);
  Tensor alltoall(const TensorEntry& entry, const ResultPlan& plan);
  Tensor reducescatter(const TensorEntry& entry, const ResultPlan& plan);

  // CUDA tensors' collective (one tensor, or a fused allreduce group)
  // through device_: on the device, or staged through host memory on
  // backend_. Their Works complete later.
  void run_on_device(const Response& response, const std::vector<const TensorEntry*>& group);
  void run_staged(HostStaging& staging, const Response& response,
                  const std::vector<const TensorEntry*>& group);
  // CUDA tensors can run (a build with CUDA), and the group's submitted
  // tensors are on one GPU.
  void check_device_group(const Response& response,
                          const std::vector<const TensorEntry*>& group) const;

  bool tracing() const { return timeline_ && timeline_->active(); }
  // One timeline event per tensor of `group` (when tracing).
  void trace(const std::vector<const TensorEntry*>& group, const std::string& phase,
             TimelineClock::time_point from, TimelineClock::time_point to);
  std::string op_event_name(OpType op_type) const;

  Backend& backend_;
  AdasumReducer adasum_;
  DeviceOperations* device_;
  Timeline* timeline_;
  const Topology& topology_;
  std::size_t fusion_threshold_;
  std::vector<unsigned char> fusion_buffer_;  // grows to the threshold; reused
  std::vector<Tensor> zero_tensors_;  // a joined rank's zeros, kept for one cycle
  std::vector<float> staging_;  // float16/bfloat16 accumulate here; reused across calls
};

}  // namespace hvd
