// CpuCollectives: one agreed collective on host buffers through the CPU
// Backend (CPU tensors, or staged host copies of CUDA tensors), with
// scaling and Average around it, float16/bfloat16 reduced in float32 where
// the backend does not (widened, or as 16-bit shares where bytes cross a
// network: half_shares.h), and the fusion buffer for a fused allreduce group
// (filled and emptied while the transfers run where they cross a network:
// fusion_pipeline.h).
#pragma once

#include <cstdint>
#include <vector>

#include "core/execution/adasum.h"
#include "core/execution/aligned_buffer.h"
#include "core/execution/backend.h"
#include "core/execution/execution_trace.h"
#include "core/execution/fusion_pipeline.h"
#include "core/execution/result_plan.h"
#include "core/negotiation/controller.h"
#include "core/negotiation/message.h"
#include "core/negotiation/tensor_queue.h"

namespace hvd {

class CpuCollectives {
 public:
  // `trace` records each tensor's phases; it outlives this object.
  CpuCollectives(Backend& backend, const Topology& topology, const ExecutionTrace& trace);

  // The response's collective on `group` (several only for a fused
  // allreduce), traced. Returns the result the library allocates, if any;
  // alltoall's received rows per rank go to `received_splits`.
  Tensor run(const Response& response, const std::vector<const TensorEntry*>& group,
             std::vector<std::int64_t>& received_splits);

  // Whether an allreduce of `dtype` with `op` (Average as Sum) is widened to
  // float32 around the backend: what it takes in the fusion buffer.
  bool stages_in_float32(DataType dtype, ReduceOp op) const;

 private:
  // Whether `count` elements of `dtype` with `op` are widened to float32
  // around the backend, or reduce as 16-bit shares.
  bool widens(DataType dtype, ReduceOp op, std::size_t count) const;
  bool as_half_shares(DataType dtype, ReduceOp op, std::size_t count) const;
  // One allreduce through the backend for the whole group (same dtype, op
  // and scale factors): packed into the fusion buffer when it has several.
  void allreduce(const std::vector<const TensorEntry*>& group);
  // The same with the copies in and out overlapping the backend's
  // transfers, a chunk at a time (fusion_pipeline.h), and large tensors
  // reduced in place in their own memory (fused_layout.h).
  void allreduce_pipelined(const std::vector<const TensorEntry*>& group, unsigned char* buffer,
                           ReduceOp op, double divisor);
  // The reduction itself on the group's elements packed in `buffer`: the
  // backend's allreduce, or Adasum with coefficients per tensor.
  void reduce_packed(const std::vector<const TensorEntry*>& group, void* buffer, DataType dtype,
                     ReduceOp op);
  // The fusion-buffer copies in, the reduction, the copies out.
  void trace_fused(const std::vector<const TensorEntry*>& group, TimelineClock::time_point t0,
                   TimelineClock::time_point t1, TimelineClock::time_point t2) const;
  Tensor allgather(const TensorEntry& entry, const ResultPlan& plan);
  Tensor alltoall(const TensorEntry& entry, const ResultPlan& plan);
  Tensor reducescatter(const TensorEntry& entry, const ResultPlan& plan);

  Backend& backend_;
  const Topology& topology_;
  const ExecutionTrace& trace_;
  AdasumReducer adasum_;
  AlignedBuffer fusion_buffer_;        // grows to the threshold; reused
  FusionPipeline pipeline_;            // its helper thread starts on first use
  std::vector<float> staging_;         // float16/bfloat16 accumulate here; reused across calls
  std::vector<unsigned char> shares_;  // every rank's 16-bit shares of this rank's slice
};

}  // namespace hvd
