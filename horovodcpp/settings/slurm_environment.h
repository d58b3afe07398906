// What Slurm tells a process about its job: the node list and tasks per
// node syntax of SLURM_*NODELIST and SLURM_*TASKS_PER_NODE, and the place
// of a task that `srun` started in its job step. Shared by the library
// (`srun python train.py` with no launcher) and hvdrun (the hosts of an
// allocation). Malformed values throw std::invalid_argument naming them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hvd {
namespace slurm {

// "node[01-03,07],gpu5" -> node01 node02 node03 node07 gpu5 (zero padding
// kept; several bracket groups multiply: "r[1-2]-n[1-2]").
std::vector<std::string> expand_nodelist(const std::string& text);
// "2(x3),1" -> {2, 2, 2, 1}. `variable` names the text in errors.
std::vector<int> expand_tasks_per_node(const std::string& text, const std::string& variable);

// A task's place in its step, as srun describes it.
struct StepTask {
  int rank = 0;        // SLURM_PROCID
  int size = 1;        // SLURM_STEP_NUM_TASKS
  int local_rank = 0;  // SLURM_LOCALID
  int local_size = 1;  // this node's entry of SLURM_STEP_TASKS_PER_NODE
  int cross_rank = 0;  // among the step's nodes that have a task with this local_rank
  int cross_size = 1;
  std::vector<std::string> nodes;  // SLURM_STEP_NODELIST, expanded
  std::string node;                // SLURMD_NODENAME: this task's node
  std::string job_id;              // SLURM_JOB_ID
  std::string step_id;             // SLURM_STEP_ID
  // Started through an MPI process-management interface (srun --mpi=pmix
  // or pmi2, or mpirun: PMIX_RANK, PMI_RANK or OMPI_COMM_WORLD_RANK set):
  // MPI takes the job from there.
  bool mpi_launched = false;
};

// Reads a variable; null when unset (std::getenv by default).
using Lookup = std::function<const char*(const char*)>;

// The step task this process is, when srun started it: SLURM_STEP_ID,
// SLURM_PROCID and SLURM_STEP_NUM_TASKS set; nullopt otherwise (no Slurm,
// or a batch script's own shell). A rank that mpirun started inside an
// allocation inherits the SLURM_* of the step running mpirun's daemons:
// it is `mpi_launched` (OMPI_COMM_WORLD_RANK), and its place comes from
// MPI, not from these. Throws std::invalid_argument for inconsistent values.
std::optional<StepTask> step_task(const Lookup& lookup);
// step_task() of this process's environment, unless a launcher placed this
// rank itself (HOROVODCPP_RANK or HOROVOD_RANK set: hvdrun runs each rank
// in a step of its own; or RANK and WORLD_SIZE other than the task's:
// torchrun inside the step): the job this process belongs to is then the
// launcher's, not the step's. Inconsistent values are an
// hvd::InvalidArgument saying so.
std::optional<StepTask> srun_task();

// The port rank 0 hosts the step's rendezvous on when nothing names one:
// derived from the job and step ids, so that every task computes the same
// and two steps running side by side on a node differ.
int derived_rendezvous_port(const StepTask& task);

}  // namespace slurm
}  // namespace hvd
