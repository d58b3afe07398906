// ProcessGroup: the child processes of a job (ranks, or one mpirun). It
// relays their output with a rank prefix, and tears every child down (TERM,
// then KILL after a grace period) when one fails or hvdrun is signalled.
#pragma once

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

// Runs every child, waits for all, and returns the outcome. When a child
// exits non-zero or dies, or hvdrun gets SIGINT/SIGTERM, every other child
// gets SIGTERM, then SIGKILL after `grace_seconds`.
JobResult run_process_group(const std::vector<ChildSpec>& children, double grace_seconds = 3.0);

}  // namespace hvdrun
