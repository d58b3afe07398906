#include "runner/placement/job_setup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>

#include "runner/cli/text.h"
#include "runner/launch/gloo_launcher.h"
#include "runner/launch/remote_commands.h"
#include "runner/placement/network.h"

namespace hvdrun {
namespace {

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) usage("cannot read " + what + " '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

int local_cores() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::string join_quoted(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& w : words) line += (line.empty() ? "" : " ") + shell_quote(w);
  return line;
}

namespace {

JobHosts hosts_of_job(const Options& options, const std::map<std::string, std::string>& env) {
  JobHosts job;
  if (!options.hosts.empty()) {
    job.hosts = parse_host_list(options.hosts);
    job.source = "-H";
    return job;
  }
  if (!options.hostfile.empty()) {
    try {
      job.hosts = parse_hostfile_text(read_file(options.hostfile, "--hostfile"));
    } catch (const UsageError& e) {
      usage(options.hostfile + ": " + e.message);
    }
    job.source = "--hostfile " + options.hostfile;
    return job;
  }
  std::string pbs_text;
  auto pbs = env.find("PBS_NODEFILE");
  bool slurm = env.count("SLURM_JOB_NODELIST") || env.count("SLURM_NODELIST");
  if (!slurm && pbs != env.end() && !pbs->second.empty()) {
    pbs_text = read_file(pbs->second, "PBS_NODEFILE");
  }
  job.hosts = hosts_from_environment(env, pbs_text);
  if (!job.hosts.empty()) {
    job.from_allocation = true;
    job.source = slurm ? "Slurm allocation" : "PBS allocation";
    return job;
  }
  // This machine alone. Like horovodrun, give it as many slots as ranks
  // asked for; more slots than cores makes mpirun --oversubscribe.
  int slots = local_cores();
  if (options.num_proc && *options.num_proc > slots) slots = *options.num_proc;
  job.hosts = {Host{"localhost", slots}};
  job.source = "this machine";
  return job;
}

// Inside a Slurm allocation whose nodes hold every host of the job, srun
// reaches them (unless the user named a remote shell).
bool slurm_reaches(const JobHosts& job, const Options& options,
                   const std::map<std::string, std::string>& env) {
  if (!options.remote_shell.empty()) return false;
  auto list = env.find("SLURM_JOB_NODELIST");
  if (list == env.end()) list = env.find("SLURM_NODELIST");
  if (list == env.end() || list->second.empty() || !env.count("SLURM_JOB_ID")) return false;
  const std::vector<std::string> nodes = expand_slurm_nodelist(list->second);
  return std::all_of(job.hosts.begin(), job.hosts.end(), [&](const Host& h) {
    return std::find(nodes.begin(), nodes.end(), h.name) != nodes.end();
  });
}

}  // namespace

JobHosts resolve_hosts(const Options& options, const std::map<std::string, std::string>& env) {
  JobHosts job = hosts_of_job(options, env);
  job.slurm = slurm_reaches(job, options, env);
  return job;
}

std::string rendezvous_host(const Options& options, const std::vector<std::string>& remote_hosts) {
  if (remote_hosts.empty()) return "127.0.0.1";
  if (!options.network_interfaces.empty()) {
    const std::string& interface_name = options.network_interfaces.front();
    std::string address = interface_ipv4(interface_name);
    if (address.empty()) {
      usage("--network-interface " + interface_name + " has no IPv4 address here");
    }
    return address;
  }
  std::string address = route_source_address(remote_hosts.front());
  if (address.empty() || address.rfind("127.", 0) == 0) address = interface_ipv4("");
  if (address.empty()) {
    throw LaunchError{
        "no non-loopback IPv4 address on this machine for the remote hosts to "
        "reach hvdrun at; give --network-interface"};
  }
  return address;
}

void check_remote_hosts(const Options& options, const std::vector<std::string>& remote_hosts) {
  const int seconds = options.start_timeout_seconds;
  std::vector<RemoteCommand> probes;
  for (const std::string& host : remote_hosts) {
    RemoteCommand p;
    p.host = host;
    p.argv = remote_shell_words(options, host);
    p.argv.push_back("true");
    probes.push_back(std::move(p));
  }
  run_remote_commands(probes, seconds, /*stop_early=*/true);
  auto blamed = std::find_if(probes.begin(), probes.end(),
                             [](const RemoteCommand& p) { return p.done && !succeeded(p); });
  if (blamed == probes.end()) {
    blamed =
        std::find_if(probes.begin(), probes.end(), [](const RemoteCommand& p) { return !p.done; });
  }
  if (blamed == probes.end()) return;
  const std::string said = last_line(blamed->output);
  const std::string detail =
      blamed->done ? describe_status(blamed->status) + (said.empty() ? "" : ": " + said)
                   : "was still running" + (said.empty() ? "" : "; it said: " + said);
  throw LaunchError{"host " + blamed->host + " did not answer within " + std::to_string(seconds) +
                    " s ('" + join_quoted(blamed->argv) + "' " + detail + ")"};
}

std::unique_ptr<hvd::TcpStoreServer> start_store(bool open_to_others, const std::string& secret) {
  try {
    return std::make_unique<hvd::TcpStoreServer>(open_to_others ? "0.0.0.0" : "127.0.0.1", 0,
                                                 secret);
  } catch (const std::exception& e) {
    throw LaunchError{std::string("cannot start the rendezvous server: ") + e.what()};
  }
}

void print_failure(const JobResult& result) {
  std::cerr << "hvdrun: " << (result.failure.empty() ? "the job failed" : result.failure)
            << "; job exit code " << result.exit_code << "\n";
}

void print_launcher_failure(JobResult result, const std::string& launcher,
                            const std::string& named) {
  const bool launcher_failed = result.failure.rfind(launcher + " ", 0) == 0;
  if (launcher_failed && !named.empty()) result.failure = named;
  print_failure(result);
}

}  // namespace hvdrun
