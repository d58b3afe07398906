// Inside a Slurm allocation: when hvdrun launches through srun, the exact
// srun argv and hostfile, and srun's failure lines read back as ranks.
#include <gtest/gtest.h>

#include "runner/launch/srun_launch.h"
#include "runner/launch/srun_output.h"
#include "runner/placement/job_setup.h"

namespace hvdrun {
namespace {

using Env = std::map<std::string, std::string>;
using Argv = std::vector<std::string>;

Options job(std::vector<std::string> command) {
  Options options;
  options.command = std::move(command);
  return options;
}

Env allocation() {
  return {{"SLURM_JOB_ID", "77"},
          {"SLURM_JOB_NODELIST", "gpu[32-33]"},
          {"SLURM_TASKS_PER_NODE", "4(x2)"}};
}

TEST(SrunLaunch, ArgvPlacesEveryRankWhereHvdrunDid) {
  const std::vector<RankPlacement> placements = place_ranks({{"gpu32", 4}, {"gpu33", 4}}, 5);
  EXPECT_EQ(srun_command(job({"python", "train.py"}), placements),
            (Argv{"env", "-u", "SLURM_NTASKS_PER_NODE", "srun", "--ntasks=5", "--nodes=2",
                  "--distribution=arbitrary", "--quit-on-interrupt", "--label", "--mpi=none",
                  "--export=ALL", "python", "train.py"}));
  EXPECT_EQ(srun_hostfile_text(placements), "gpu32\ngpu32\ngpu32\ngpu32\ngpu33\n");
}

TEST(SrunLaunch, OutputFilePerRank) {
  Options options = job({"a.out"});
  options.output_filename = "logs";
  const Argv argv = srun_command(options, place_ranks({{"n1", 1}}, 1));
  EXPECT_EQ(argv[argv.size() - 2], "--output=logs/rank.%t/output.log");
}

TEST(SrunLaunch, OnlyInsideAnAllocationThatHoldsEveryHost) {
  EXPECT_TRUE(resolve_hosts(job({"x"}), allocation()).slurm);
  Options listed = job({"x"});
  listed.hosts = "gpu33:2";  // -H inside the allocation
  EXPECT_TRUE(resolve_hosts(listed, allocation()).slurm);
  listed.hosts = "gpu33:2,elsewhere:2";
  EXPECT_FALSE(resolve_hosts(listed, allocation()).slurm);
  Options shell = job({"x"});
  shell.remote_shell = "ssh {host}";  // the user's own choice stands
  EXPECT_FALSE(resolve_hosts(shell, allocation()).slurm);
  EXPECT_FALSE(resolve_hosts(job({"x"}), {}).slurm);
}

TEST(SrunOutput, NamesTheFirstRankSrunReports) {
  SrunOutput exited;
  exited.feed("3: training...");
  exited.feed("srun: error: gpu33: task 5: Exited with exit code 7");
  exited.feed("srun: error: gpu32: tasks 0-3: Killed");
  EXPECT_EQ(exited.failure(), "rank 5 (host gpu33) exited with code 7");

  SrunOutput killed;
  killed.feed("srun: error: gpu33: tasks 4,6: Killed");
  EXPECT_EQ(killed.failure(), "rank 4 (host gpu33) was killed (Killed)");

  SrunOutput quiet;
  quiet.feed("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.");
  EXPECT_EQ(quiet.failure(), "");
}

}  // namespace
}  // namespace hvdrun
