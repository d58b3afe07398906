// Batched copies for the device fusion buffer: many tensors packed into (or
// unpacked from) one buffer in few kernel launches, each element scaled on
// the way (prescale in, Average and postscale out). Planning is pure C++ so
// it is tested without a GPU; gpu/batched_copy.cu runs a CopyLaunch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/negotiation/tensor_queue.h"
#include "horovodcpp/types.h"

namespace hvd {

// One contiguous copy of `count` elements.
struct CopyTask {
  const void* src = nullptr;
  void* dst = nullptr;
  std::uint64_t count = 0;
};

// One kernel launch: passed by value as the kernel's parameter, so its size
// stays well below CUDA's 4 KiB parameter limit (64 tasks: 1.6 KiB).
constexpr int kMaxCopyTasks = 64;
struct CopyLaunch {
  CopyTask tasks[kMaxCopyTasks];
  std::int32_t num_tasks = 0;
  std::uint64_t max_count = 0;  // the largest task: sizes the grid
};

// How elements are scaled: dst = src * (factor / divisor), as scale_copy.
struct CopyScale {
  double divisor = 1.0;
  double factor = 1.0;
  double multiplier() const { return factor / divisor; }
  bool identity() const { return multiplier() == 1.0; }
};

// Tasks longer than `max_task_elements` are cut into pieces (so one huge
// tensor does not leave the other tasks' blocks idle), then packed into
// launches of at most kMaxCopyTasks tasks, in order. Empty tasks vanish.
std::vector<CopyLaunch> plan_batched_copies(const std::vector<CopyTask>& tasks,
                                            std::size_t element_size,
                                            std::uint64_t max_task_elements = 1u << 22);

// Copies of `pieces` (pointer, elements) packed back to back into `buffer`
// (pack) or from it (unpack): offset of piece i = sum of the earlier sizes.
// A null pointer keeps its place in the buffer but is not copied.
std::vector<CopyTask> pack_tasks(const std::vector<std::pair<const void*, std::uint64_t>>& pieces,
                                 void* buffer, std::size_t element_size);
std::vector<CopyTask> unpack_tasks(const void* buffer,
                                   const std::vector<std::pair<void*, std::uint64_t>>& pieces,
                                   std::size_t element_size);

// A fused group's inputs and outputs as pieces (pointer, elements) for
// pack_tasks / unpack_tasks, and the elements of all of them. A joined
// rank's zeros (TensorEntry::joined, without device memory) are null pieces: the
// caller zeroes the buffer before packing (`zeros`) and nothing reads
// their result.
struct GroupPieces {
  std::vector<std::pair<const void*, std::uint64_t>> inputs;
  std::vector<std::pair<void*, std::uint64_t>> outputs;
  std::uint64_t total = 0;
  bool zeros = false;
};
GroupPieces group_pieces(const std::vector<const TensorEntry*>& group);

// Runs a launch on host memory with scale_copy: the reference the device
// kernel is tested against.
void run_copy_launch_on_host(const CopyLaunch& launch, DataType dtype, CopyScale scale);

}  // namespace hvd
