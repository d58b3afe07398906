// hvdrun: launches a horovodcpp job through mpirun (MPI mode) or by starting
// every rank itself around a TCP rendezvous store (Gloo mode).
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/descriptor_limit.h"
#include "runner/cli/check_build.h"
#include "runner/cli/options.h"
#include "runner/cli/text.h"
#include "runner/elastic/elastic_launch.h"
#include "runner/launch/gloo_launcher.h"
#include "runner/launch/mpi_command.h"
#include "runner/launch/mpirun_output.h"
#include "runner/launch/remote_commands.h"
#include "runner/launch/srun_launch.h"
#include "runner/placement/environment.h"
#include "runner/placement/hosts.h"
#include "runner/placement/job_setup.h"
#include "runner/placement/network.h"
#include "runner/ranks/flight_recorder_analysis.h"
#include "runner/ranks/process_group.h"
#include "runner/ranks/rank_reports.h"
#include "settings/settings.h"
#include "settings/settings_doc.h"
#include "store/job_auth.h"
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

// With -np below the allocation's slots, which of them the ranks take.
void say_placement(const JobHosts& job, const std::vector<RankPlacement>& placements) {
  int slots = 0;
  for (const Host& h : job.hosts) slots += h.slots;
  if (static_cast<int>(placements.size()) >= slots) return;
  std::vector<Host> used;
  for (const RankPlacement& p : placements) {
    if (used.empty() || used.back().name != p.host) used.push_back(Host{p.host, 0});
    ++used.back().slots;
  }
  std::cerr << "hvdrun: " << placements.size() << " ranks in the " << job.source << " of " << slots
            << " slots (" << host_list_text(job.hosts) << "): " << host_list_text(used)
            << ", its hosts filled in order\n";
}

// ---- Gloo mode ----------------------------------------------------------

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
  watch.dump_grace = kDumpGraceSeconds;
  const int size = static_cast<int>(placements.size());
  watch.all_accounted = [&reports, size] { return reports.all_accounted(size); };
  JobResult result = run_process_group(children, kGraceSeconds, watch);
  if (result.exit_code != 0) print_failure(result);
  return result.exit_code;
}

// ---- MPI mode -----------------------------------------------------------

int run_mpi(Options options, const JobHosts& job, int num_proc,
            const std::map<std::string, std::string>& env) {
  const std::vector<Host>& hosts = job.hosts;
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
  launch.slurm = job.slurm;
  for (const Host& h : hosts) {
    if (is_local_host(h.name)) launch.local_host_cores[h.name] = local_cores();
  }
  launch.forwarded = forwarded_environment(env);
  for (const auto& [name, value] : env) {
    if (name.rfind("OMPI_MCA_", 0) == 0) launch.user_mca.insert(name.substr(9));
  }
  if (launch.flavor == MpiFlavor::kOpenMpi && !launch.user_mca.count("btl")) {
    launch.site_btl =
        open_mpi_btl_setting(capture("ompi_info --parsable --level 9 --param btl all"));
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
  watch.dump_grace = kDumpGraceSeconds;
  JobResult result = run_process_group({child}, kGraceSeconds, watch);
  if (result.exit_code != 0) {
    print_launcher_failure(result, child.argv.front(), mpirun_output.failure());
  }
  return result.exit_code;
}

// The folder the ranks write their flight recorder dumps to: the user's
// HOROVODCPP_FLIGHT_RECORDER_DIR, else one of this hvdrun's in the working
// directory, set here for the ranks (whatever launches them). `env` gets it.
std::string flight_recorder_dir(std::map<std::string, std::string>& env) {
  const std::string variable = hvd::settings::variable(hvd::settings::Setting::kFlightRecorderDir);
  auto it = env.find(variable);
  if (it != env.end() && !it->second.empty()) return it->second;
  char cwd[4096] = {};
  const std::string base = getcwd(cwd, sizeof cwd) ? cwd : ".";
  const std::string dir = base + "/hvdrun-flight-recorder." + std::to_string(getpid());
  env[variable] = dir;
  setenv(variable.c_str(), dir.c_str(), 1);
  return dir;
}

// After the job: a failed one's analysis of the dumps; the folder goes if
// the job left nothing in it.
void report_flight_recorder(const std::string& dir, int code) {
  const std::map<int, FlightDump> dumps = read_flight_dumps(dir);
  if (dumps.empty()) {
    rmdir(dir.c_str());  // only if empty
    return;
  }
  if (code == 0) {
    std::cerr << "hvdrun: flight recorder dumps in " << dir << "\n";
    return;
  }
  std::cerr << "hvdrun: flight recorder (hvdrun --analyze " << dir << "):\n";
  for (const std::string& line : analyze_flight_dumps(dumps))
    std::cerr << "hvdrun:   " << line << "\n";
}

int launch(const Options& options, const std::map<std::string, std::string>& env);

int run(const std::vector<std::string>& args) {
  // docs/settings.md's table (a maintainer's command, not a horovodrun flag).
  if (args == std::vector<std::string>{"--settings-markdown"}) {
    std::cout << hvd::settings::markdown();
    return 0;
  }
  if (args.size() == 2 && args[0] == "--analyze") return analyze_command(args[1]);
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

  const std::string flight_dir = flight_recorder_dir(env);
  const int code = launch(options, env);
  report_flight_recorder(flight_dir, code);
  return code;
}

int launch(const Options& options, const std::map<std::string, std::string>& env) {
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
  // Three pipes per local rank (stdin, stdout, stderr), and some to spare.
  hvd::raise_descriptor_limit(3L * num_proc + 256);

  Mode mode = options.mode;
  if (mode == Mode::kAuto) mode = find_in_path("mpirun").empty() ? Mode::kGloo : Mode::kMpi;
  if (options.verbose) {
    std::cerr << "hvdrun: " << num_proc << " ranks on " << host_list_text(job.hosts) << " ("
              << job.source << "), " << (mode == Mode::kMpi ? "MPI" : "Gloo") << " mode\n";
  }
  if (job.from_allocation) say_placement(job, placements);
  if (mode == Mode::kMpi) return run_mpi(options, job, num_proc, env);
  if (!options.mpi_args.empty() || !options.binding_args.empty()) {
    std::cerr << "hvdrun: Gloo mode: --mpi-args and --binding-args do not apply (no mpirun)\n";
  }
  if (job.slurm) return run_gloo_in_slurm(options, placements);
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
