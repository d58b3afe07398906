// A task's place from Slurm's variables as srun sets them (the node list
// syntax is tested through hvdrun's use of it, test/runner/test_hosts.cc).
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "settings/slurm_environment.h"

namespace hvd {
namespace slurm {
namespace {

using Env = std::map<std::string, std::string>;

std::optional<StepTask> task_of(const Env& env) {
  return step_task([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

// Task `procid` of `srun -n 5` over node[1-2] with 3 + 2 tasks, on `node`.
Env five_tasks(int procid, int localid, const std::string& node) {
  return {{"SLURM_JOB_ID", "4711"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_PROCID", std::to_string(procid)},
          {"SLURM_LOCALID", std::to_string(localid)},
          {"SLURM_STEP_NUM_TASKS", "5"},
          {"SLURM_STEP_NODELIST", "node[1-2]"},
          {"SLURM_STEP_TASKS_PER_NODE", "3,2"},
          {"SLURMD_NODENAME", node}};
}

TEST(SlurmStepTask, NoneOutsideASrunStep) {
  EXPECT_FALSE(task_of({}));
  Env batch_shell = five_tasks(0, 0, "node1");  // a batch script's own shell: no step id
  batch_shell.erase("SLURM_STEP_ID");
  EXPECT_FALSE(task_of(batch_shell));
}

TEST(SlurmStepTask, PlacesEachTaskAsHorovodWould) {
  const std::optional<StepTask> first = task_of(five_tasks(0, 0, "node1"));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->rank, 0);
  EXPECT_EQ(first->size, 5);
  EXPECT_EQ(first->local_size, 3);
  EXPECT_EQ(first->cross_rank, 0);
  EXPECT_EQ(first->cross_size, 2);
  EXPECT_EQ(first->nodes, (std::vector<std::string>{"node1", "node2"}));
  EXPECT_EQ(first->node, "node1");
  EXPECT_FALSE(first->mpi_launched);

  // Local rank 2 exists on node1 only: a cross communicator of one.
  const std::optional<StepTask> third = task_of(five_tasks(2, 2, "node1"));
  EXPECT_EQ(third->cross_rank, 0);
  EXPECT_EQ(third->cross_size, 1);

  const std::optional<StepTask> last = task_of(five_tasks(4, 1, "node2"));
  EXPECT_EQ(last->rank, 4);
  EXPECT_EQ(last->local_rank, 1);
  EXPECT_EQ(last->local_size, 2);
  EXPECT_EQ(last->cross_rank, 1);
  EXPECT_EQ(last->cross_size, 2);
}

TEST(SlurmStepTask, KnowsAnMpiLaunch) {
  Env pmix = five_tasks(1, 1, "node1");
  pmix["PMIX_RANK"] = "1";  // srun --mpi=pmix
  EXPECT_TRUE(task_of(pmix)->mpi_launched);
  Env mpirun = five_tasks(0, 0, "node1");  // a rank of mpirun, in its daemons' step
  mpirun["OMPI_COMM_WORLD_RANK"] = "6";
  EXPECT_TRUE(task_of(mpirun)->mpi_launched);
}

TEST(SlurmStepTask, RefusesInconsistentValues) {
  Env env = five_tasks(5, 0, "node1");  // rank 5 of 5
  EXPECT_THROW(task_of(env), std::invalid_argument);
  env = five_tasks(0, 0, "node9");  // a node not in the step
  EXPECT_THROW(task_of(env), std::invalid_argument);
  env = five_tasks(4, 2, "node2");  // local id 2 of 2 tasks
  EXPECT_THROW(task_of(env), std::invalid_argument);
  env = five_tasks(0, 0, "node1");
  env["SLURM_STEP_TASKS_PER_NODE"] = "5";  // one entry for two nodes
  EXPECT_THROW(task_of(env), std::invalid_argument);
}

TEST(SlurmRendezvousPort, SameForEveryTaskDifferentPerStep) {
  const StepTask a = *task_of(five_tasks(0, 0, "node1"));
  const StepTask b = *task_of(five_tasks(4, 1, "node2"));
  EXPECT_EQ(derived_rendezvous_port(a), derived_rendezvous_port(b));
  Env next_step = five_tasks(0, 0, "node1");
  next_step["SLURM_STEP_ID"] = "1";
  EXPECT_NE(derived_rendezvous_port(a), derived_rendezvous_port(*task_of(next_step)));
  for (int job = 1; job < 2000; ++job) {
    Env env = five_tasks(0, 0, "node1");
    env["SLURM_JOB_ID"] = std::to_string(job);
    const int port = derived_rendezvous_port(*task_of(env));
    EXPECT_GE(port, 12000);
    EXPECT_LT(port, 32000);
  }
}

}  // namespace
}  // namespace slurm
}  // namespace hvd
