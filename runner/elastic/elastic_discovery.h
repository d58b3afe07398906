// Where an elastic job may run: a fixed host list (-H, --hostfile, this
// machine), or what --host-discovery-script prints, run again every second.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runner/placement/hosts.h"

namespace hvdrun {

// The output of a discovery script: one host per line, "host:slots" or
// "host" (then `default_slots` slots; UsageError without them), in the
// order printed. Blank lines are skipped (a script may print nothing while
// no host is ready); a host printed twice is an error.
std::vector<Host> parse_discovered_hosts(const std::string& output,
                                         std::optional<int> default_slots);

class HostDiscovery {
 public:
  // A fixed list, or the script `command` (run by sh -c) with `default_slots`.
  static HostDiscovery fixed(std::vector<Host> hosts);
  static HostDiscovery script(std::string command, std::optional<int> default_slots);

  // The hosts now: the fixed list, or the script's output (run at most once
  // a second; between runs, and when a later run fails, the last good
  // answer). Throws UsageError when the first run fails (as horovodrun: a
  // broken script is a mistake, not a transient fault). `warning` gets a
  // line when a later run fails.
  const std::vector<Host>& hosts(std::chrono::steady_clock::time_point now, std::string* warning);

 private:
  HostDiscovery() = default;

  std::string command_;  // empty: fixed
  std::optional<int> default_slots_;
  std::vector<Host> hosts_;
  bool discovered_ = false;
  std::chrono::steady_clock::time_point next_run_{};
};

// Runs `command` with sh -c, stdin from /dev/null; its stdout (stderr goes
// to hvdrun's). Kills it (its process group) after `timeout`. Returns the
// exit status as waitpid gives it, or -1 when it was killed for the time.
std::pair<int, std::string> run_command(const std::string& command,
                                        std::chrono::milliseconds timeout);

}  // namespace hvdrun
