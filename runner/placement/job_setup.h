// What hvdrun's launch modes (Gloo, MPI, elastic) share: the job's hosts,
// the store that is the rendezvous and hears the ranks' failure reports,
// the probe of remote hosts, and how a failure is told.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runner/cli/options.h"
#include "runner/placement/hosts.h"
#include "runner/ranks/process_group.h"
#include "store/tcp_store_server.h"

namespace hvdrun {

// How long ranks have to exit after SIGTERM before SIGKILL.
constexpr double kGraceSeconds = 3.0;
// After the first failure, how long the other ranks have to fail by
// themselves, each naming what it saw (a roll call takes 2 to 5 s), before
// SIGTERM; over as soon as every rank has reported or been named.
constexpr double kFailureGraceSeconds = 6.0;
// After that, the ranks still running get SIGUSR1 (their flight recorder
// dumps) this long before SIGTERM.
constexpr double kDumpGraceSeconds = 0.5;

// A runtime failure (not the user's command line): exit 1.
struct LaunchError {
  std::string message;
};

// The executable `name` resolves to through PATH, or "".
std::string find_in_path(const std::string& name);

// This machine's online cores.
int local_cores();

// `words` as one shell line, each quoted where it needs it.
std::string join_quoted(const std::vector<std::string>& words);

struct JobHosts {
  std::vector<Host> hosts;
  bool from_allocation = false;
  // Inside a Slurm allocation that holds every host (and no --remote-shell):
  // srun starts the ranks there, never ssh.
  bool slurm = false;
  std::string source;  // for --verbose
};

// -H, else --hostfile, else a Slurm or PBS allocation, else this machine
// with as many slots as -np (more than its cores makes mpirun oversubscribe).
JobHosts resolve_hosts(const Options& options, const std::map<std::string, std::string>& env);

// The address the ranks reach hvdrun's store at: loopback for a job on this
// machine; else --network-interface's, or the one that routes to the first
// remote host. Throws UsageError or LaunchError when there is none.
std::string rendezvous_host(const Options& options, const std::vector<std::string>& remote_hosts);

// Runs "REMOTE_SHELL true" for every remote host at once; throws
// LaunchError naming the first host that failed or did not answer in time.
void check_remote_hosts(const Options& options, const std::vector<std::string>& remote_hosts);

// The store the ranks report to (horovodcpp/core/runtime/hvdrun_link.h):
// reachable from every host of the job; in Gloo mode also the rendezvous.
// Only connections that prove the job's secret are served (docs/security.md).
std::unique_ptr<hvd::TcpStoreServer> start_store(bool open_to_others, const std::string& secret);

// One line: the first failure, and the job's exit code.
void print_failure(const JobResult& result);
// The same for a job run by one launcher child (mpirun, srun) whose argv[0]
// is `launcher`: when the failure is the launcher's own exit ("mpirun exited
// with code 1"), the rank it named in its output (`named`, if not empty)
// says more.
void print_launcher_failure(JobResult result, const std::string& launcher,
                            const std::string& named);

}  // namespace hvdrun
