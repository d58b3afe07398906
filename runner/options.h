// hvdrun's command line, parsed into one plain struct.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hvdrun {

enum class Mode { kAuto, kMpi, kGloo };

struct Options {
  std::optional<int> num_proc;         // -np
  std::string hosts;                   // -H h1:4,h2:4
  std::string hostfile;                // --hostfile
  Mode mode = Mode::kAuto;             // --mpi | --gloo (auto: MPI if mpirun exists)
  std::string network_interface;       // --network-interface
  std::optional<int> ssh_port;         // -p
  std::string ssh_identity_file;       // -i
  std::string output_filename;         // --output-filename DIR
  bool verbose = false;                // --verbose
  int start_timeout_seconds = 30;      // --start-timeout
  bool check_build = false;            // --check-build
  bool help = false;                   // --help / -h
  // Settings forwarded to every rank as HOROVODCPP_* variables
  // (--fusion-threshold-mb, --cycle-time-ms, --cache-capacity,
  // --timeline-filename, --log-level, and those from --config-file).
  std::map<std::string, std::string> rank_settings;
  // How a command reaches a remote host; "{host}" is replaced by the host.
  // Default "ssh [-p PORT] [-i KEY] -o BatchMode=yes {host}"; tests use
  // "ip netns exec ns-{host}". Option --remote-shell, or HVDRUN_REMOTE_SHELL.
  std::string remote_shell;
  std::vector<std::string> command;    // what every rank runs
};

// Throws UsageError (one clear line) for unknown flags, missing values,
// malformed numbers, a missing command (unless --help/--check-build).
Options parse_options(const std::vector<std::string>& args);
std::string help_text();

struct UsageError {
  std::string message;
};

}  // namespace hvdrun
