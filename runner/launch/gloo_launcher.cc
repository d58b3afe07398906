// Gloo mode: one ChildSpec per rank. Local ranks are exec'd directly with
// their environment; remote ranks run through the remote shell.
//
// --output-filename DIR: rank R's stdout and stderr (each line prefixed
// "[R]<stdout>: " / "[R]<stderr>: ") go to DIR/rank.R/output.log.
#include "runner/launch/gloo_launcher.h"

#include <signal.h>
#include <unistd.h>

#include <sstream>

#include "settings/settings.h"

namespace hvdrun {

std::vector<std::string> remote_shell_words(const Options& options, const std::string& host) {
  std::vector<std::string> words;
  if (options.remote_shell.empty()) {
    words = {"ssh", "-o", "BatchMode=yes"};
    if (options.ssh_port) {
      words.push_back("-p");
      words.push_back(std::to_string(*options.ssh_port));
    }
    if (!options.ssh_identity_file.empty()) {
      words.push_back("-i");
      words.push_back(options.ssh_identity_file);
    }
    words.push_back(host);
    return words;
  }
  std::istringstream in(options.remote_shell);
  std::string word;
  while (in >> word) {
    for (size_t at; (at = word.find("{host}")) != std::string::npos;) {
      word.replace(at, 6, host);
    }
    words.push_back(word);
  }
  return words;
}

std::string shell_quote(const std::string& word) {
  if (word.empty()) return "''";
  bool plain = true;
  for (char c : word) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string("_-./=:,+@%").find(c) != std::string::npos;
    if (!ok) plain = false;
  }
  if (plain) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

void add_interface_settings(const Options& options, std::map<std::string, std::string>& env) {
  if (options.network_interfaces.empty()) return;
  // Gloo uses one interface; NCCL may use them all (as horovodrun does).
  env[hvd::settings::variable(hvd::settings::Setting::kGlooIface)] =
      options.network_interfaces.front();
  std::string all;
  for (const std::string& name : options.network_interfaces) {
    all += (all.empty() ? "" : ",") + name;
  }
  env["NCCL_SOCKET_IFNAME"] = all;
}

std::vector<ChildSpec> gloo_children(const Options& options,
                                     const std::vector<RankPlacement>& placements,
                                     const RendezvousAddress& rendezvous,
                                     const std::map<std::string, std::string>& forwarded,
                                     const std::string& cwd) {
  std::vector<ChildSpec> children;
  const std::string size = std::to_string(placements.size());
  for (const RankPlacement& p : placements) {
    // Later entries win: the job's own values over anything forwarded.
    std::map<std::string, std::string> env = forwarded;
    for (const auto& [key, value] : options.rank_settings) env[key] = value;
    using hvd::settings::Setting;
    using hvd::settings::variable;
    const std::pair<Setting, std::string> placement[] = {
        {Setting::kRank, std::to_string(p.rank)},
        {Setting::kSize, size},
        {Setting::kLocalRank, std::to_string(p.local_rank)},
        {Setting::kLocalSize, std::to_string(p.local_size)},
        {Setting::kCrossRank, std::to_string(p.cross_rank)},
        {Setting::kCrossSize, std::to_string(p.cross_size)},
        {Setting::kHostname, p.host}};
    // Horovod's names too: scripts shard their data with them before init().
    for (const auto& [setting, value] : placement) {
      env[variable(setting)] = value;
      env[hvd::settings::horovod_variable(setting)] = value;
    }
    env[variable(Setting::kCpuOperations)] = "gloo";
    env[variable(Setting::kGlooRendezvousAddr)] = rendezvous.host;
    env[variable(Setting::kGlooRendezvousPort)] = std::to_string(rendezvous.port);
    // The same store takes the ranks' reports (horovodcpp/core/runtime/hvdrun_link.h).
    env[variable(Setting::kHvdrunStore)] = rendezvous.host + ":" + std::to_string(rendezvous.port);
    const std::string secret_variable = variable(Setting::kJobSecret);
    env[secret_variable] = rendezvous.secret;
    add_interface_settings(options, env);

    ChildSpec child;
    child.label = "[" + std::to_string(p.rank) + "]";
    child.timestamps = options.prefix_timestamp;
    if (!options.output_filename.empty()) {
      child.output_file =
          options.output_filename + "/rank." + std::to_string(p.rank) + "/output.log";
    }
    if (is_local_host(p.host)) {
      child.argv = options.command;
    } else {
      // The remote shell does not carry our environment: the command does,
      // but for the secret, which comes on the rank's stdin (a command line
      // is visible to every user of both hosts).
      std::string line = "cd " + shell_quote(cwd) + " && IFS= read -r " + secret_variable +
                         " && export " + secret_variable + " && exec env";
      for (const auto& [key, value] : env) {
        if (key != secret_variable) line += " " + shell_quote(key + "=" + value);
      }
      child.stdin_text = rendezvous.secret + "\n";
      for (const auto& word : options.command) line += " " + shell_quote(word);
      child.argv = remote_shell_words(options, p.host);
      child.argv.push_back(line);
    }
    // Remote ranks keep `env` too: harmless for the remote shell, and it
    // names the rank and host in failure messages.
    child.env = std::move(env);
    children.push_back(std::move(child));
  }
  return children;
}

std::vector<RemoteCommand> remote_signal_commands(const Options& options,
                                                  const std::vector<RankPlacement>& placements,
                                                  const std::function<long(int)>& pid_of, int sig) {
  std::vector<RemoteCommand> commands;
  for (const RankPlacement& p : placements) {
    if (is_local_host(p.host)) continue;
    const long pid = pid_of(p.rank);
    if (pid <= 0) continue;
    const std::string id = std::to_string(pid);
    RemoteCommand c;
    c.host = p.host;
    c.argv = remote_shell_words(options, p.host);
    c.argv.push_back(sig == SIGTERM ? "kill -TERM " + id + "; kill -CONT " + id
                                    : "kill -KILL " + id);
    commands.push_back(std::move(c));
  }
  return commands;
}

}  // namespace hvdrun
