#include "core/device/batched_copy_plan.h"

#include <algorithm>

#include "base/check.h"
#include "core/execution/reduction.h"

namespace hvd {

std::vector<CopyLaunch> plan_batched_copies(const std::vector<CopyTask>& tasks,
                                            std::size_t element_size,
                                            std::uint64_t max_task_elements) {
  HVD_CHECK(max_task_elements > 0, InvalidArgument, "max_task_elements must be positive");
  std::vector<CopyLaunch> launches;
  auto add = [&](const CopyTask& task) {
    if (launches.empty() || launches.back().num_tasks == kMaxCopyTasks) launches.emplace_back();
    CopyLaunch& launch = launches.back();
    launch.tasks[launch.num_tasks++] = task;
    launch.max_count = std::max(launch.max_count, task.count);
  };
  for (const CopyTask& task : tasks) {
    for (std::uint64_t done = 0; done < task.count; done += max_task_elements) {
      const std::uint64_t bytes = done * element_size;
      add({static_cast<const unsigned char*>(task.src) + bytes,
           static_cast<unsigned char*>(task.dst) + bytes,
           std::min(max_task_elements, task.count - done)});
    }
  }
  return launches;
}

std::vector<CopyTask> pack_tasks(const std::vector<std::pair<const void*, std::uint64_t>>& pieces,
                                 void* buffer, std::size_t element_size) {
  std::vector<CopyTask> tasks;
  std::uint64_t offset = 0;
  for (const auto& [src, count] : pieces) {
    unsigned char* dst = static_cast<unsigned char*>(buffer) + offset * element_size;
    if (src) tasks.push_back({src, dst, count});
    offset += count;
  }
  return tasks;
}

std::vector<CopyTask> unpack_tasks(const void* buffer,
                                   const std::vector<std::pair<void*, std::uint64_t>>& pieces,
                                   std::size_t element_size) {
  std::vector<CopyTask> tasks;
  std::uint64_t offset = 0;
  for (const auto& [dst, count] : pieces) {
    const unsigned char* src = static_cast<const unsigned char*>(buffer) + offset * element_size;
    if (dst) tasks.push_back({src, dst, count});
    offset += count;
  }
  return tasks;
}

void run_copy_launch_on_host(const CopyLaunch& launch, DataType dtype, CopyScale scale) {
  for (int i = 0; i < launch.num_tasks; ++i) {
    const CopyTask& task = launch.tasks[i];
    scale_copy(dtype, task.src, task.dst, task.count, scale.divisor, scale.factor);
  }
}

GroupPieces group_pieces(const std::vector<const TensorEntry*>& group) {
  GroupPieces pieces;
  for (const TensorEntry* entry : group) {
    const std::uint64_t n = entry->input.num_elements();
    pieces.inputs.emplace_back(entry->joined ? nullptr : entry->input.data, n);
    pieces.outputs.emplace_back(entry->joined ? nullptr : entry->output.data, n);
    pieces.total += n;
    pieces.zeros = pieces.zeros || entry->joined;
  }
  return pieces;
}

}  // namespace hvd
