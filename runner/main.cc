// hvdrun: launches a horovodcpp job through mpirun (MPI mode) or by starting
// every rank itself around a TCP rendezvous store (Gloo mode).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runner/check_build.h"
#include "runner/elastic_driver.h"
#include "runner/environment.h"
#include "runner/gloo_launcher.h"
#include "runner/hosts.h"
#include "runner/mpi_command.h"
#include "runner/mpirun_output.h"
#include "runner/options.h"
#include "runner/process_group.h"
#include "runner/rank_reports.h"
#include "runner/remote_commands.h"
#include "settings/settings.h"
#include "settings/settings_doc.h"
#include "store/job_auth.h"
#include "store/tcp_store.h"
#include "store/tcp_store_server.h"

#ifndef HVDRUN_VERSION
#define HVDRUN_VERSION "unknown"
#endif
#ifndef HVDRUN_HAVE_MPI
#define HVDRUN_HAVE_MPI 0
#endif
#ifndef HVDRUN_HAVE_GLOO
#define HVDRUN_HAVE_GLOO 0
#endif
#ifndef HVDRUN_HAVE_NCCL
#define HVDRUN_HAVE_NCCL 0
#endif

namespace hvdrun {
namespace {

[[noreturn]] void usage(const std::string& message) { throw UsageError{message}; }

// How long ranks have to exit after SIGTERM before SIGKILL.
constexpr double kGraceSeconds = 3.0;
// After the first failure, how long the other ranks have to fail by
// themselves, each naming what it saw (a roll call takes 2 to 5 s), before
// SIGTERM; over as soon as every rank has reported or been named.
constexpr double kFailureGraceSeconds = 6.0;

// A runtime failure (not the user's command line): exit 1.
struct LaunchError {
  std::string message;
};

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) usage("cannot read " + what + " '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
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

// The executable `name` resolves to through PATH, or "".
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

// Runs `command` through the shell and returns its stdout+stderr.
std::string capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return out;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
  pclose(pipe);
  return out;
}

void print_check_build() {
  BuildInfo info;
  info.version = HVDRUN_VERSION;
  info.mpi = HVDRUN_HAVE_MPI;
  info.gloo = HVDRUN_HAVE_GLOO;
  info.nccl = HVDRUN_HAVE_NCCL;
  // Importing a framework takes seconds; a broken install must not hang -cb.
  info.tensorflow = python_module_imports("horovodcpp.tensorflow", 120);
  info.torch = python_module_imports("horovodcpp.torch", 120);
  std::cout << check_build_text(info);
}

struct JobHosts {
  std::vector<Host> hosts;
  bool from_allocation = false;
  std::string source;  // for --verbose
};

JobHosts resolve_hosts(const Options& options, const std::map<std::string, std::string>& env) {
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

// ---- Gloo mode ----------------------------------------------------------

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
    throw LaunchError{"no non-loopback IPv4 address on this machine for the remote hosts to "
                      "reach hvdrun at; give --network-interface"};
  }
  return address;
}

// Runs "REMOTE_SHELL true" for every remote host at once; throws
// LaunchError naming the first host that failed or did not answer in time.
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

// The store the ranks report to (horovodcpp/core/runtime/hvdrun_link.h): reachable
// from every host of the job; in Gloo mode also the rendezvous.
// Only connections that prove the job's secret are served (docs/security.md).
std::unique_ptr<hvd::TcpStoreServer> start_store(bool open_to_others, const std::string& secret) {
  try {
    return std::make_unique<hvd::TcpStoreServer>(open_to_others ? "0.0.0.0" : "127.0.0.1", 0,
                                                 secret);
  } catch (const std::exception& e) {
    throw LaunchError{std::string("cannot start the rendezvous server: ") + e.what()};
  }
}

// One line: the first failure, and the job's exit code.
void print_failure(const JobResult& result) {
  std::cerr << "hvdrun: " << (result.failure.empty() ? "the job failed" : result.failure)
            << "; job exit code " << result.exit_code << "\n";
}

int run_gloo(const Options& options, const std::vector<RankPlacement>& placements,
             const std::map<std::string, std::string>& env) {
  std::vector<std::string> remote_hosts;
  std::set<std::string> seen;
  for (const RankPlacement& p : placements) {
    if (seen.insert(p.host).second && !is_local_host(p.host)) remote_hosts.push_back(p.host);
  }
  if (!remote_hosts.empty()) check_remote_hosts(options, remote_hosts);

  RendezvousAddress rendezvous;
  rendezvous.host = rendezvous_host(options, remote_hosts);
  rendezvous.secret = hvd::job_auth::new_secret();
  std::unique_ptr<hvd::TcpStoreServer> server =
      start_store(!remote_hosts.empty(), rendezvous.secret);
  rendezvous.port = server->port();
  RankReports reports(rendezvous.port, rendezvous.secret);

  char cwd[4096] = {};
  if (getcwd(cwd, sizeof cwd) == nullptr) throw LaunchError{"getcwd() failed"};
  std::vector<ChildSpec> children =
      gloo_children(options, placements, rendezvous, forwarded_environment(env), cwd);
  if (options.verbose) {
    std::cerr << "hvdrun: Gloo mode, rendezvous at " << rendezvous.host << ":" << rendezvous.port
              << "\n";
    for (std::size_t i = 0; i < children.size(); ++i) {
      std::cerr << "hvdrun: rank " << placements[i].rank << " on " << placements[i].host << ": "
                << join_quoted(children[i].argv) << "\n";
    }
  }
  JobWatch watch;
  watch.reported_failure = [&reports] { return reports.first_failure(); };
  watch.signal_remote = [&](int sig) {
    std::vector<RemoteCommand> commands = remote_signal_commands(
        options, placements, [&reports](int rank) { return reports.pid_of(rank); }, sig);
    if (!commands.empty()) run_remote_commands(commands, 2.0);
  };
  watch.failure_grace = kFailureGraceSeconds;
  const int size = static_cast<int>(placements.size());
  watch.all_accounted = [&reports, size] { return reports.all_accounted(size); };
  JobResult result = run_process_group(children, kGraceSeconds, watch);
  if (result.exit_code != 0) print_failure(result);
  return result.exit_code;
}

// ---- Elastic (Gloo) mode ------------------------------------------------

// How long a worker's init() waits for its round, past --elastic-timeout,
// so that hvdrun, which gives up first, is the one that explains why.
constexpr int kWorkerWaitMarginSeconds = 30;

// The elastic driver's bounds from -np, --min-np, --max-np and the rest.
ElasticConfig elastic_config(const Options& options) {
  const ElasticOptions& elastic = options.elastic;
  ElasticConfig config;
  config.num_proc = options.num_proc.value_or(elastic.min_np.value_or(0));
  if (config.num_proc < 1) usage("elastic: -np N or --min-np N is required");
  config.min_np = elastic.min_np.value_or(config.num_proc);
  config.max_np = elastic.max_np.value_or(config.num_proc);
  if (config.min_np > config.num_proc || config.num_proc > config.max_np) {
    usage("elastic: -np " + std::to_string(config.num_proc) + " must lie between --min-np " +
          std::to_string(config.min_np) + " and --max-np " + std::to_string(config.max_np));
  }
  config.timeout = std::chrono::seconds(elastic.timeout_seconds);
  config.reset_limit = elastic.reset_limit;
  config.cooldown_range = elastic.cooldown_range;
  return config;
}

int run_gloo_elastic(const Options& options, const std::map<std::string, std::string>& env) {
  const ElasticOptions& elastic = options.elastic;
  const ElasticConfig config = elastic_config(options);

  // Fixed hosts are checked now, as in a fixed job; discovered ones as they come.
  std::vector<std::string> remote_hosts;
  std::optional<HostDiscovery> discovery;
  if (elastic.discovery_script.empty()) {
    JobHosts job = resolve_hosts(options, env);
    if (options.hosts.empty() && options.hostfile.empty() && !job.from_allocation) {
      job.hosts = {Host{"localhost", config.max_np}};
    }
    for (const Host& h : job.hosts) {
      if (!is_local_host(h.name)) remote_hosts.push_back(h.name);
    }
    if (!remote_hosts.empty()) check_remote_hosts(options, remote_hosts);
    discovery = HostDiscovery::fixed(job.hosts);
  } else {
    discovery = HostDiscovery::script(elastic.discovery_script, elastic.slots_per_host);
  }

  RendezvousAddress rendezvous;
  const bool open_to_others = !remote_hosts.empty() || !elastic.discovery_script.empty();
  rendezvous.host = rendezvous_host(options, remote_hosts);
  if (remote_hosts.empty() && open_to_others) {
    // Hosts may join later: an address they can reach, where there is one.
    const std::string address = interface_ipv4(
        options.network_interfaces.empty() ? "" : options.network_interfaces.front());
    if (!address.empty()) rendezvous.host = address;
  }
  rendezvous.secret = hvd::job_auth::new_secret();
  std::unique_ptr<hvd::TcpStoreServer> server = start_store(open_to_others, rendezvous.secret);
  rendezvous.port = server->port();
  hvd::TcpStore store("127.0.0.1", server->port(), std::chrono::seconds(10), rendezvous.secret);

  char cwd[4096] = {};
  if (getcwd(cwd, sizeof cwd) == nullptr) throw LaunchError{"getcwd() failed"};
  std::map<std::string, std::string> forwarded = forwarded_environment(env);
  forwarded[hvd::settings::variable(hvd::settings::Setting::kElasticRoundTimeout)] =
      std::to_string(elastic.timeout_seconds + kWorkerWaitMarginSeconds);
  forwarded["HOROVOD_ELASTIC"] = "1";  // as horovodrun's elastic workers have
  auto worker_spec = [&](long long worker, const std::vector<RankPlacement>& places,
                         std::size_t rank) {
    std::map<std::string, std::string> worker_env = forwarded;
    worker_env[hvd::settings::variable(hvd::settings::Setting::kElasticWorker)] =
        std::to_string(worker);
    const RankPlacement& place = places[rank];
    ChildSpec child = gloo_children(options, places, rendezvous, worker_env, cwd)[rank];
    // Output is labelled by worker: ranks change from round to round.
    child.label = "[" + std::to_string(worker) + "]";
    if (!options.output_filename.empty()) {
      child.output_file =
          options.output_filename + "/rank." + std::to_string(worker) + "/output.log";
    }
    if (options.verbose) {
      std::cerr << "hvdrun: elastic: worker " << worker << " (rank " << place.rank << ") on "
                << place.host << ": " << join_quoted(child.argv) << "\n";
    }
    return child;
  };
  if (options.verbose) {
    std::cerr << "hvdrun: elastic Gloo mode, rendezvous at " << rendezvous.host << ":"
              << rendezvous.port << "; -np " << config.num_proc << ", --min-np " << config.min_np
              << ", --max-np " << config.max_np << "\n";
  }
  ElasticDriver driver(config, store, std::move(*discovery), worker_spec, std::cerr);
  GroupControl control;
  control.poll = [&] { return driver.poll(std::chrono::steady_clock::now()); };
  control.on_exit = [&](std::size_t child, int status) {
    return driver.on_exit(child, status, std::chrono::steady_clock::now());
  };
  JobResult result = run_process_group({}, 3.0, JobWatch{}, &control);
  if (result.exit_code != 0) {
    std::cerr << "hvdrun: " << (result.failure.empty() ? "the job failed" : result.failure)
              << "; job exit code " << result.exit_code << "\n";
  }
  return result.exit_code;
}

// ---- MPI mode -----------------------------------------------------------

int run_mpi(Options options, const std::vector<Host>& hosts, int num_proc,
            const std::map<std::string, std::string>& env) {
  std::string mpirun = find_in_path("mpirun");
  if (mpirun.empty()) usage("--mpi: mpirun was not found on PATH (use --gloo, or load your MPI)");
  MpiLaunch launch;
  launch.flavor = detect_mpi_flavor(capture("mpirun --version"));
  if (launch.flavor == MpiFlavor::kUnknown) {
    usage("--mpi: '" + mpirun + " --version' names neither Open MPI nor MPICH/Hydra; use --gloo");
  }
  launch.is_root = geteuid() == 0;
  launch.hosts = hosts;
  launch.num_proc = num_proc;
  for (const Host& h : hosts) {
    if (is_local_host(h.name)) launch.local_host_cores[h.name] = local_cores();
  }
  launch.forwarded = forwarded_environment(env);
  for (const auto& [name, value] : env) {
    if (name.rfind("OMPI_MCA_", 0) == 0) launch.user_mca.insert(name.substr(9));
  }
  std::vector<std::string> remote_hosts;
  for (const Host& h : hosts) {
    if (!is_local_host(h.name)) remote_hosts.push_back(h.name);
  }
  const std::string secret = hvd::job_auth::new_secret();
  std::unique_ptr<hvd::TcpStoreServer> server = start_store(!remote_hosts.empty(), secret);
  try {
    options.rank_settings[hvd::settings::variable(hvd::settings::Setting::kHvdrunStore)] =
        rendezvous_host(options, remote_hosts) + ":" + std::to_string(server->port());
  } catch (const LaunchError& e) {
    std::cerr << "hvdrun: warning: the ranks cannot report failures (" << e.message
              << "); a failure ends the job when mpirun ends it\n";
  }
  RankReports reports(server->port(), secret);
  // mpirun hands it to the ranks from its own environment (-x NAME), so that
  // no command line shows it.
  const std::string secret_variable = hvd::settings::variable(hvd::settings::Setting::kJobSecret);
  launch.forwarded[secret_variable] = secret;

  ChildSpec child;
  child.env[secret_variable] = secret;
  child.argv = mpi_command(options, launch);
  child.mpirun_tags = launch.flavor != MpiFlavor::kMpich;  // Hydra tags with -prepend-rank
  child.timestamps = options.prefix_timestamp;
  if (options.verbose) {
    std::cerr << "hvdrun: " << mpi_flavor_name(launch.flavor) << ": " << join_quoted(child.argv)
              << "\n";
  }
  // mpirun ends the ranks on every host (stopped ones too: Open MPI sends
  // SIGCONT before SIGTERM) when it is signalled or a rank fails.
  MpirunOutput mpirun_output;
  JobWatch watch;
  watch.reported_failure = [&reports] { return reports.first_failure(); };
  watch.on_line = [&mpirun_output](const std::string& line) { mpirun_output.feed(line); };
  // No early end of the grace: the ranks that gave up end the job through
  // MPI_Abort, and a SIGTERM while mpirun aborts may crash it (Open MPI 4.1).
  watch.failure_grace = kFailureGraceSeconds;
  JobResult result = run_process_group({child}, kGraceSeconds, watch);
  if (result.exit_code != 0) {
    // "mpirun exited with code 1" says less than the rank mpirun named.
    const bool mpirun_failed = result.failure.rfind(child.argv.front() + " ", 0) == 0;
    if (mpirun_failed && !mpirun_output.failure().empty()) result.failure = mpirun_output.failure();
    print_failure(result);
  }
  return result.exit_code;
}

int run(const std::vector<std::string>& args) {
  // docs/settings.md's table (a maintainer's command, not a horovodrun flag).
  if (args == std::vector<std::string>{"--settings-markdown"}) {
    std::cout << hvd::settings::markdown();
    return 0;
  }
  std::map<std::string, std::string> env = current_environment();
  Options options = parse_options(args, env);
  if (options.help) {
    std::cout << help_text();
    return 0;
  }
  if (options.version) {
    std::cout << HVDRUN_VERSION << "\n";
    return 0;
  }
  if (options.check_build) {
    print_check_build();
    return 0;
  }

  if (options.elastic.enabled()) return run_gloo_elastic(options, env);

  JobHosts job = resolve_hosts(options, env);
  int num_proc = 0;
  if (options.num_proc) {
    num_proc = *options.num_proc;
  } else if (job.from_allocation) {
    num_proc = default_num_proc(env, job.hosts).value_or(0);
  }
  if (num_proc < 1) usage("-np N is required (no Slurm or PBS allocation to take it from)");
  std::vector<RankPlacement> placements = place_ranks(job.hosts, num_proc);

  Mode mode = options.mode;
  if (mode == Mode::kAuto) mode = find_in_path("mpirun").empty() ? Mode::kGloo : Mode::kMpi;
  if (options.verbose) {
    std::cerr << "hvdrun: " << num_proc << " ranks on " << host_list_text(job.hosts) << " ("
              << job.source << "), " << (mode == Mode::kMpi ? "MPI" : "Gloo") << " mode\n";
  }
  if (mode == Mode::kMpi) return run_mpi(options, job.hosts, num_proc, env);
  if (!options.mpi_args.empty() || !options.binding_args.empty()) {
    std::cerr << "hvdrun: Gloo mode: --mpi-args and --binding-args do not apply (no mpirun)\n";
  }
  return run_gloo(options, placements, env);
}

}  // namespace
}  // namespace hvdrun

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return hvdrun::run(args);
  } catch (const hvdrun::UsageError& e) {
    std::cerr << "hvdrun: error: " << e.message << "\nsee hvdrun --help\n";
    return 2;
  } catch (const hvdrun::LaunchError& e) {
    std::cerr << "hvdrun: error: " << e.message << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "hvdrun: error: " << e.what() << "\n";
    return 1;
  }
}
