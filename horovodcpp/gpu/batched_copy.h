// The device fusion buffer's copy kernel: one launch runs every task of a
// CopyLaunch (up to 64 tensors), scaling on the way.
#pragma once

#include <vector>

#include "core/device/batched_copy_plan.h"

namespace hvd {

// Queues `launch` on `stream` (a cudaStream_t) of the current device: every
// element becomes src * (factor / divisor) exactly as scale_copy computes
// it on the host (bool: copied). Throws BackendError if the launch fails.
void launch_batched_copy(const CopyLaunch& launch, DataType dtype, CopyScale scale, void* stream);
// Every (src, dst, count) task, in as few launches as plan_batched_copies makes.
void launch_batched_copies(const std::vector<CopyTask>& tasks, DataType dtype, CopyScale scale,
                           void* stream);

}  // namespace hvd
