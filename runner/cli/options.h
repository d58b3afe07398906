// hvdrun's command line, parsed into one plain struct. hvdrun accepts every
// flag of horovodrun 0.28.1 (runner/flags.cc lists them, with what each does
// here), so a Horovod job script works with `horovodrun` replaced by `hvdrun`.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hvdrun {

enum class Mode { kAuto, kMpi, kGloo };

// Elastic training (runner/elastic_driver.h): on with --min-np or
// --host-discovery-script, as in horovodrun.
struct ElasticOptions {
  std::optional<int> min_np;          // --min-np
  std::optional<int> max_np;          // --max-np
  std::optional<int> slots_per_host;  // --slots-per-host
  std::string discovery_script;       // --host-discovery-script
  // --elastic-timeout, else HOROVOD_ELASTIC_TIMEOUT, else 600 (horovodrun's).
  int timeout_seconds = 600;
  std::optional<int> reset_limit;                     // --reset-limit
  std::optional<std::pair<int, int>> cooldown_range;  // --blacklist-cooldown-range

  bool enabled() const { return min_np.has_value() || !discovery_script.empty(); }
};

struct Options {
  std::optional<int> num_proc;  // -np
  std::string hosts;            // -H h1:4,h2:4
  std::string hostfile;         // --hostfile
  Mode mode = Mode::kAuto;      // --mpi | --gloo (auto: MPI if mpirun exists)
  // --network-interface(s): in the order given, without repeats. Gloo uses
  // the first; mpirun and NCCL get them all.
  std::vector<std::string> network_interfaces;
  std::optional<int> ssh_port;            // -p
  std::string ssh_identity_file;          // -i
  std::string output_filename;            // --output-filename DIR
  bool verbose = false;                   // --verbose
  bool prefix_timestamp = false;          // --prefix-output-with-timestamp
  int start_timeout_seconds = 30;         // --start-timeout, else HOROVOD_START_TIMEOUT
  std::vector<std::string> mpi_args;      // --mpi-args: words added before the command
  std::vector<std::string> binding_args;  // --binding-args: replace mpirun's binding words
  bool check_build = false;               // -cb, --check-build
  bool version = false;                   // -v, --version
  bool help = false;                      // -h, --help
  // Variables every rank gets, by their full names (HOROVODCPP_CYCLE_TIME,
  // NCCL_IB_DISABLE, ...): from the settings flags and --config-file.
  std::map<std::string, std::string> rank_settings;
  // How a command reaches a remote host; "{host}" is replaced by the host.
  // Default "ssh [-p PORT] [-i KEY] -o BatchMode=yes {host}"; tests use
  // "ip netns exec ns-{host}". Option --remote-shell, or HVDRUN_REMOTE_SHELL.
  std::string remote_shell;
  ElasticOptions elastic;
  std::vector<std::string> command;  // what every rank runs
};

// Throws UsageError (one clear line) for unknown flags, missing values,
// malformed numbers, horovodrun flags whose feature hvdrun lacks, a missing
// command (unless --help, --version or --check-build). `env` supplies
// HVDRUN_REMOTE_SHELL and HOROVOD_START_TIMEOUT where no flag gave them.
Options parse_options(const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env = {});
std::string help_text();

struct UsageError {
  std::string message;
};

}  // namespace hvdrun
