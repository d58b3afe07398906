#include "runner/elastic/elastic_discovery.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <sstream>

#include "runner/cli/text.h"

extern char** environ;

namespace hvdrun {
namespace {

using Clock = std::chrono::steady_clock;

// How often the script runs (horovodrun's DISCOVER_HOSTS_FREQUENCY_SECS),
// and how long one run may take.
constexpr auto kRediscoverEvery = std::chrono::seconds(1);
constexpr auto kScriptTimeout = std::chrono::seconds(30);

std::string describe_status(int status) {
  if (status == -1) return "did not finish within " + std::to_string(kScriptTimeout.count()) + " s";
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  return "was killed by signal " + std::to_string(WTERMSIG(status));
}

}  // namespace

std::vector<Host> parse_discovered_hosts(const std::string& output,
                                         std::optional<int> default_slots) {
  std::vector<Host> hosts;
  std::set<std::string> seen;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    line = trim(line);
    if (line.empty()) continue;
    const bool bare = line.find(':') == std::string::npos;
    if (bare && !default_slots) {
      usage("the discovery script printed '" + line +
            "' without ':slots'; print host:slots or give --slots-per-host");
    }
    std::vector<Host> entries;
    try {
      entries = parse_host_list(line);
    } catch (const UsageError& e) {
      usage("the discovery script printed '" + line + "': " + e.message);
    }
    for (Host& host : entries) {
      if (bare) host.slots = *default_slots;
      if (!seen.insert(host.name).second) {
        usage("the discovery script printed host " + host.name + " twice");
      }
      hosts.push_back(std::move(host));
    }
  }
  return hosts;
}

HostDiscovery HostDiscovery::fixed(std::vector<Host> hosts) {
  HostDiscovery discovery;
  discovery.hosts_ = std::move(hosts);
  discovery.discovered_ = true;
  return discovery;
}

HostDiscovery HostDiscovery::script(std::string command, std::optional<int> default_slots) {
  HostDiscovery discovery;
  discovery.command_ = std::move(command);
  discovery.default_slots_ = default_slots;
  return discovery;
}

const std::vector<Host>& HostDiscovery::hosts(Clock::time_point now, std::string* warning) {
  if (command_.empty() || now < next_run_) return hosts_;
  next_run_ = now + kRediscoverEvery;
  auto [status, output] = run_command(command_, kScriptTimeout);
  std::string error;
  if (status != 0) {
    error = "--host-discovery-script '" + command_ + "' " + describe_status(status);
  } else {
    try {
      hosts_ = parse_discovered_hosts(output, default_slots_);
      discovered_ = true;
      return hosts_;
    } catch (const UsageError& e) {
      error = e.message;
    }
  }
  if (!discovered_) usage(error);
  *warning = error + "; keeping the hosts it printed last";
  return hosts_;
}

std::pair<int, std::string> run_command(const std::string& command,
                                        std::chrono::milliseconds timeout) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {-1, ""};
  // Its own process group (killed whole on timeout), hvdrun's signal
  // handlers reset and its signal mask cleared.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const char* argv[] = {"sh", "-c", command.c_str(), nullptr};
  pid_t pid = -1;
  const int failed =
      posix_spawn(&pid, "/bin/sh", &actions, &attributes, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(fds[1]);
  if (failed != 0) {
    close(fds[0]);
    return {-1, ""};
  }
  std::string output;
  const auto deadline = Clock::now() + timeout;
  bool timed_out = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buffer[4096];
    const ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n == 0) break;
    if (n > 0) output.append(buffer, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return {timed_out ? -1 : status, output};
}

}  // namespace hvdrun
