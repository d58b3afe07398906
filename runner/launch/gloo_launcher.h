// Gloo mode: hvdrun starts every rank itself (locally, or through the
// remote shell) with the environment that tells it its place in the job.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runner/cli/options.h"
#include "runner/launch/remote_commands.h"
#include "runner/placement/hosts.h"
#include "runner/placement/network.h"
#include "runner/ranks/process_group.h"

namespace hvdrun {

struct RendezvousAddress {
  std::string host;  // an address every host can reach hvdrun's store at
  int port = 0;
  std::string secret;  // what the store's clients prove they hold
};

// One child per rank. Each gets HOROVODCPP_RANK, _SIZE, _LOCAL_RANK,
// _LOCAL_SIZE, _CROSS_RANK, _CROSS_SIZE, _HOSTNAME (its host as listed) and
// the same seven by Horovod's names (HOROVOD_RANK, ...);
// HOROVODCPP_CPU_OPERATIONS=gloo, _GLOO_RENDEZVOUS_ADDR/_PORT, _HVDRUN_STORE
// (the same store, for the ranks' reports), _JOB_SECRET (what the store
// asks the ranks to prove); with
// --network-interface, HOROVODCPP_GLOO_IFACE (the first) and
// NCCL_SOCKET_IFNAME (all); the rank settings; and `forwarded` (see
// environment.h). A remote rank runs as: the remote-shell words with {host}
// substituted, then ONE argument holding the shell command
// "cd CWD && IFS= read -r HOROVODCPP_JOB_SECRET && export ... && exec env
// K=V ... COMMAND" (every word shell-quoted; the secret comes on stdin,
// ChildSpec::stdin_text, never on the command line).
std::vector<ChildSpec> gloo_children(const Options& options,
                                     const std::vector<RankPlacement>& placements,
                                     const RendezvousAddress& rendezvous,
                                     const std::map<std::string, std::string>& forwarded,
                                     const std::string& cwd);

std::string shell_quote(const std::string& word);

// With --network-interface: HOROVODCPP_GLOO_IFACE (the first) and
// NCCL_SOCKET_IFNAME (all of them) in `env`.
void add_interface_settings(const Options& options, std::map<std::string, std::string>& env);

// The command that reaches `host`: options.remote_shell split into words
// with {host} replaced, or "ssh -o BatchMode=yes [-p PORT] [-i KEY] HOST".
std::vector<std::string> remote_shell_words(const Options& options, const std::string& host);

// The commands that send `sig` to the ranks on remote hosts, by the pids
// they reported (`pid_of(rank)`; 0: unknown, skipped), through the remote
// shell: a rank does not die with the remote shell that started it.
// `sig` is SIGTERM, which comes with a SIGCONT (a stopped rank handles its
// TERM only once continued), or SIGKILL.
std::vector<RemoteCommand> remote_signal_commands(const Options& options,
                                                  const std::vector<RankPlacement>& placements,
                                                  const std::function<long(int)>& pid_of, int sig);

}  // namespace hvdrun
