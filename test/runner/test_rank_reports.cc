// hvdrun's summary of a failure the ranks reported, and of the rank mpirun
// named in its output.
#include <gtest/gtest.h>

#include "runner/launch/mpirun_output.h"
#include "runner/ranks/rank_reports.h"

namespace hvdrun {
namespace {

TEST(RankReports, SummaryNamesTheBlamedRanks) {
  EXPECT_EQ(describe_failure_report("0\n1\nGloo allreduce: rank 1 stopped answering (x)"),
            "rank 1 stopped answering (rank 0: Gloo allreduce: rank 1 stopped answering (x))");
  EXPECT_EQ(describe_failure_report("2\n1,3\nMPI_Iallreduce: ranks 1, 3 stopped answering\n(y)"),
            "ranks 1, 3 stopped answering (rank 2: MPI_Iallreduce: ranks 1, 3 stopped "
            "answering\n(y))");
  EXPECT_EQ(describe_failure_report("0\n\nstalled"), "rank 0 failed: stalled");
}

TEST(MpirunOutput, NamesARankKilledByASignal) {
  MpirunOutput output;
  output.feed("[1,0]<stdout>: step 3");
  EXPECT_EQ(output.failure(), "");
  output.feed(
      "mpirun noticed that process rank 2 with PID 0 on node h1 exited on signal 9 "
      "(Killed).");
  EXPECT_EQ(output.failure(), "rank 2 (node h1) was killed by signal 9 (Killed)");
  output.feed(
      "mpirun noticed that process rank 0 with PID 0 on node h1 exited on signal 15 "
      "(Terminated).");
  EXPECT_EQ(output.failure(), "rank 2 (node h1) was killed by signal 9 (Killed)");  // the first
}

TEST(MpirunOutput, NamesTheFirstRankToExitNonZero) {
  MpirunOutput output;
  for (const char* line :
       {"mpirun detected that one or more processes exited with non-zero status, thus causing",
        "the job to be terminated. The first process to do so was:", "",
        "  Process name: [[12103,1],1]", "  Exit code:    7"}) {
    output.feed(line);
  }
  EXPECT_EQ(output.failure(), "rank 1 exited with code 7");
}

}  // namespace
}  // namespace hvdrun
