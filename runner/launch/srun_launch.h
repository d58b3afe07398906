// Gloo mode inside a Slurm allocation: the ranks are the tasks of one
// `srun` step, never started through ssh, so Slurm accounts for them,
// confines them to the job's CPUs and GPUs, and `scancel` ends them. srun
// puts rank R where hvdrun placed it (--distribution=arbitrary over a
// hostfile of the placements); each rank takes its place in the job from
// Slurm's variables (horovodcpp/settings/slurm_environment.h) and meets the
// others through hvdrun's store, as in any Gloo job.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runner/cli/options.h"
#include "runner/placement/hosts.h"

namespace hvdrun {

// SLURM_HOSTFILE's text: rank R's host on line R.
std::string srun_hostfile_text(const std::vector<RankPlacement>& placements);

// "env -u SLURM_NTASKS_PER_NODE srun --ntasks=N --nodes=H
// --distribution=arbitrary --quit-on-interrupt --label --mpi=none
// --export=ALL [--output=DIR/rank.%t/output.log] COMMAND": one task per
// rank; SIGINT cancels the step; each line labelled with its rank; no MPI
// process management (the ranks use Gloo); the ranks get hvdrun's
// environment. No --kill-on-bad-exit: hvdrun ends the step once the other
// ranks had the failure grace to say what they saw, as in any job.
std::vector<std::string> srun_command(const Options& options,
                                      const std::vector<RankPlacement>& placements);

// Runs the job; hvdrun's exit code.
int run_gloo_in_slurm(const Options& options, const std::vector<RankPlacement>& placements);

}  // namespace hvdrun
