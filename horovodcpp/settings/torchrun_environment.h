// What torchrun (and a plain env:// launch) tells a process about its job:
// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK (the node's
// rank), MASTER_ADDR and MASTER_PORT, the variables torch.distributed's
// env:// rendezvous reads. A Horovod-API script that torchrun starts takes
// its place from them instead of being a job of one. Malformed values
// throw std::invalid_argument naming them.
#pragma once

#include <optional>
#include <string>

#include "settings/slurm_environment.h"

namespace hvd {
namespace torchrun {

struct Task {
  int rank = 0;             // RANK
  int size = 1;             // WORLD_SIZE
  int local_rank = 0;       // LOCAL_RANK
  int local_size = 1;       // LOCAL_WORLD_SIZE
  int node_rank = 0;        // GROUP_RANK (else rank / local_size)
  int nodes = 1;            // size / local_size
  std::string master_addr;  // MASTER_ADDR: where rank 0 runs
  int master_port = 0;      // MASTER_PORT: torch's own store (taken)
  std::string run_id;       // TORCHELASTIC_RUN_ID, empty for a plain launch
};

// The task these variables describe: RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT set; nullopt when RANK or WORLD_SIZE is unset. Without
// LOCAL_RANK and LOCAL_WORLD_SIZE, every rank is taken to be on the one
// host when MASTER_ADDR is a loopback address, and refused otherwise.
std::optional<Task> task(const slurm::Lookup& lookup);

// task() of this process's environment, unless a launcher of ours placed
// this rank (HOROVODCPP_RANK or HOROVOD_RANK: hvdrun), or MPI's process
// management started it (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK).
// Inconsistent values are an hvd::InvalidArgument saying so.
std::optional<Task> launched_task();

}  // namespace torchrun
}  // namespace hvd
