// ProcessGroup: the child processes of a job (ranks, or one mpirun). It
// relays their output with a rank prefix, and tears every child down (TERM,
// then KILL after a grace period) when one fails or hvdrun is signalled.
#pragma once

#include <csignal>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace hvdrun {

struct ChildSpec {
  std::vector<std::string> argv;           // argv[0] is looked up in PATH
  std::map<std::string, std::string> env;  // added to hvdrun's environment
  // Output prefix, e.g. "[1]" -> "[1]<stdout>: ..."; empty: no prefix
  // (mpirun prefixes its own ranks' lines).
  std::string label;
  std::string output_file;   // if set, stdout+stderr go to this file instead
  bool mpirun_tags = false;  // the child is `mpirun --tag-output` (runner/output_lines.h)
  bool srun_labels = false;  // the child is `srun --label` (runner/output_lines.h)
  bool timestamps = false;  // each line starts with the local time (--prefix-output-with-timestamp)
  // The child's stdin, then end of file (empty: /dev/null). A few bytes:
  // it is written to a pipe before the child starts.
  std::string stdin_text;
  // What asks the child to end, before SIGKILL after the grace. `srun
  // --quit-on-interrupt` takes SIGINT: it cancels its step, whose tasks
  // Slurm then ends wherever they run (a SIGKILLed srun would leave them).
  int stop_signal = SIGTERM;
};

struct JobResult {
  int exit_code = 0;    // hvdrun's exit code: 0 only if every child exited 0
  std::string failure;  // e.g. "rank 2 (host h2) was killed by signal 9 (SIGKILL)"
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

// A failure a rank reported: a one-line summary, and the ranks it blamed
// (those it saw stop answering).
struct ReportedFailure {
  std::string summary;  // "": none
  std::vector<int> blamed;
};

// What hvdrun learns about the job besides its children's exits.
struct JobWatch {
  // Polled about every 200 ms while the job runs. The first failure reported
  // ends the job like a failed child, and wins over exits seen in the same
  // round; but a blamed rank's own exit (non-zero, or a signal) seen later
  // is the cause the survivors saw, and becomes the job's failure.
  std::function<ReportedFailure()> reported_failure;
  // Sees every output line of the children, without prefix or newline.
  std::function<void(const std::string&)> on_line;
  // Called with SIGTERM, then with SIGKILL, as the children are: the ranks
  // out of hvdrun's reach by process group (those on remote hosts).
  std::function<void(int)> signal_remote;
  // Seconds the other children get after the first failure (a child's or a
  // reported one) to end by themselves, each saying what it saw, before
  // SIGTERM; 0: at once. hvdrun's own SIGINT/SIGTERM never waits.
  double failure_grace = 0;
  // Polled during that grace: true once every rank has either reported a
  // failure or been named by a report; the grace then ends a second later.
  std::function<bool()> all_accounted;
  // > 0: a failed job's teardown first sends the children SIGUSR1, on which
  // horovodcpp ranks dump their flight recorders, and waits this many
  // seconds before SIGTERM.
  double dump_grace = 0;
};

// Runs every child, waits for all, and returns the outcome. When a child
// exits non-zero or dies, or a failure is reported (after the failure
// grace), or hvdrun gets SIGINT/SIGTERM, every other child gets SIGTERM
// and SIGCONT (a stopped process handles its TERM only once continued),
// then SIGKILL after `grace_seconds`. With `control`, the driver decides
// what a child's exit means and may start and stop children.
JobResult run_process_group(const std::vector<ChildSpec>& children, double grace_seconds = 3.0,
                            const JobWatch& watch = {}, const GroupControl* control = nullptr);

}  // namespace hvdrun
