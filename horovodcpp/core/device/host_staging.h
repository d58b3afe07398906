// HostStaging: CUDA tensors' collectives on a CPU backend (MPI, Gloo),
// staged through pinned host memory. The executor asks the staging for
// host copies of a group's inputs, runs the CPU collective on them exactly
// as for CPU tensors (fusion, scaling, float16/bfloat16 in float32), and
// hands the results back; the staging copies them to the device and
// completes the Works once they are there, on a thread of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/negotiation/tensor_queue.h"

namespace hvd {

class HostStaging {
 public:
  virtual ~HostStaging() = default;

  // Copies every entry's input to host memory, ordered after its ready
  // event, and waits for those copies (the only wait on the GPU). Returns
  // one host view per entry (dtype and shape of the input, device cpu),
  // valid and not touched by the GPU until the next stage_in. Every GPU
  // copy of an earlier collective has finished by then.
  virtual std::vector<TensorView> stage_in(const std::vector<const TensorEntry*>& group) = 0;

  // After the CPU collective wrote each result into `staged[i]` (allreduce,
  // broadcast): copies it to group[i]'s output on the device, makes each
  // caller's stream wait for the copy, and completes the Works once it is
  // done. Returns at once.
  virtual void finish_in_place(const std::vector<const TensorEntry*>& group,
                               const std::vector<TensorView>& staged) = 0;

  // For a collective with a library-allocated result (allgather, alltoall,
  // reducescatter): copies `result` (host) into new device memory on the
  // entry's GPU that becomes the Work's output, as above.
  virtual void finish_with_result(const TensorEntry& entry, const Tensor& result,
                                  std::vector<std::int64_t> received_splits) = 0;
};

// Where each staged tensor lies in one pinned buffer.
struct StagingPlan {
  std::vector<std::size_t> offsets;  // bytes from the buffer's start
  std::size_t total = 0;             // bytes the buffer needs
};

// Tensors of `bytes[i]` bytes back to back, each starting on a multiple of
// `alignment` (a power of two; 256 keeps copies and vector loops aligned).
StagingPlan plan_staging(const std::vector<std::size_t>& bytes, std::size_t alignment = 256);

// The capacity a reused buffer grows to when it holds `current` bytes and
// `needed` are asked for: `current` if enough, else at least double (few
// reallocations while fusion groups grow) and rounded up to 1 MiB.
std::size_t grown_capacity(std::size_t current, std::size_t needed);

}  // namespace hvd
