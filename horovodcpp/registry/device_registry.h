// The device operations this build has: NCCL, or CUDA tensors staged
// through host memory onto a CPU transport.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/device/device_operations.h"
#include "core/diagnostics/timeline.h"
#include "core/negotiation/controller.h"
#include "core/process_sets/process_set_channel.h"

namespace hvd {

// The DeviceOperations this build and HOROVODCPP_GPU_OPERATIONS choose for
// a process set with `controller` (null: CUDA tensors are refused with a
// clear error). `cpu_transport`: the set's CPU backend's name (staged
// operations run on that backend, whatever CPU name the variable gives).
// `channel`: the job's process-set channel for the global set (null for
// user sets): with NCCL, HOROVODCPP_HIERARCHICAL_ALLREDUCE builds its
// sub-transports through it (collective over every rank of the job).
// `timeline` (may be null; it outlives the operations) shows what runs on
// the GPU: NCCL's collectives, the staged copies to and from host memory.
std::unique_ptr<DeviceOperations> create_device_operations(Controller& controller,
                                                           const std::string& cpu_transport,
                                                           ProcessSetChannel* channel = nullptr,
                                                           Timeline* timeline = nullptr);

// "nccl" when built with NCCL, then the CPU transports when built with
// CUDA (staged); empty without CUDA.
std::vector<std::string> available_gpu_operations();
// NCCL_VERSION_CODE of the NCCL this build has; 0 without NCCL.
int built_nccl_version();

}  // namespace hvd
