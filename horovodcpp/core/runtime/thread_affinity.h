// Thread affinity (HOROVODCPP_THREAD_AFFINITY, Horovod's format): CPU ids
// separated by commas, one per rank of the host; local rank i pins its
// coordinator threads to the i-th. Keeps the coordinator off the cores the
// training's own threads (data loaders, OpenMP) are pinned to.
#pragma once

#include <optional>
#include <string>
#include <thread>

namespace hvd {

// The CPU local rank `local_rank` of `local_size` pins to, from `list`.
// hvd::InvalidArgument, naming the variable, on a malformed id, fewer ids
// than ranks on the host, or a CPU this process may not run on.
int thread_affinity_cpu(const std::string& list, int local_rank, int local_size);

// The setting's CPU for this rank; nullopt when it is unset or empty.
std::optional<int> thread_affinity_from_settings(int local_rank, int local_size);

// Pins `thread` to `cpu` (checked by thread_affinity_cpu).
void pin_thread(std::thread& thread, int cpu);

}  // namespace hvd
