// Which backend runs collectives on CUDA tensors:
// HOROVODCPP_GPU_OPERATIONS (Horovod's HOROVOD_GPU_OPERATIONS) = nccl, mpi or
// gloo. NCCL works on device memory; mpi and gloo stage through pinned host
// memory. Chosen once per job, the same way on every rank.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hvd {

// `setting`: the variable's value, if set. `built`: the backends this build
// has ("nccl" when built with NCCL, and the CPU transports). Default: nccl
// when built, else `cpu_transport` (the job's transport, staged). Throws
// InvalidArgument for an unknown name or one this build lacks.
std::string choose_gpu_operations(const std::optional<std::string>& setting,
                                  const std::vector<std::string>& built,
                                  const std::string& cpu_transport);

// Reads the environment (see above).
std::string gpu_operations_from_env(const std::vector<std::string>& built,
                                    const std::string& cpu_transport);

// The warning for HOROVODCPP_HIERARCHICAL_ALLREDUCE=1 (`hierarchical`) when
// `chosen` (as above) stages CUDA tensors, which it does not apply to; ""
// when there is nothing to warn about.
std::string staged_hierarchical_warning(const std::string& chosen, bool hierarchical);

}  // namespace hvd
