// ProcessGroup: the child processes of a job (ranks, or one mpirun). It
// relays their output with a rank prefix, and tears every child down (TERM,
// then KILL after a grace period) when one fails or hvdrun is signalled.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace hvdrun {

struct ChildSpec {
  std::vector<std::string> argv;              // argv[0] is looked up in PATH
  std::map<std::string, std::string> env;     // added to hvdrun's environment
  // Output prefix, e.g. "[1]" -> "[1]<stdout>: ..."; empty: no prefix
  // (mpirun prefixes its own ranks' lines).
  std::string label;
  std::string output_file;  // if set, stdout+stderr go to this file instead
};

struct JobResult {
  int exit_code = 0;     // hvdrun's exit code: 0 only if every child exited 0
  std::string failure;   // e.g. "rank 2 (host h2) was killed by signal 9 (SIGKILL)"
};

// What an elastic job's driver (runner/elastic_driver.h) tells the group.
struct GroupOrders {
  std::vector<ChildSpec> start;   // children to start now, numbered after the others
  std::vector<std::size_t> stop;  // children to end: SIGTERM, then SIGKILL after the grace
  std::string failure;            // not empty: the job fails with this reason (exit 1)
  bool more_to_come = false;      // the job goes on even while no child runs
};

// How a driver steers the group: children come and go without ending the job.
struct GroupControl {
  // A child ended (`status` as waitpid gives it). True: the job goes on
  // without it; false: its exit counts as in a fixed job.
  std::function<bool(std::size_t child, int status)> on_exit;
  // Called before the first loop and then about every 200 ms.
  std::function<GroupOrders()> poll;
};

// Runs every child, waits for all, and returns the outcome. When a child
// exits non-zero or dies, or hvdrun gets SIGINT/SIGTERM, every other child
// gets SIGTERM, then SIGKILL after `grace_seconds`. With `control`, the
// driver decides what a child's exit means and may start and stop children.
JobResult run_process_group(const std::vector<ChildSpec>& children, double grace_seconds = 3.0,
                            const GroupControl* control = nullptr);

}  // namespace hvdrun
