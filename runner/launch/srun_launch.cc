#include "runner/launch/srun_launch.h"

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include "runner/launch/gloo_launcher.h"
#include "runner/launch/srun_output.h"
#include "runner/placement/job_setup.h"
#include "runner/placement/network.h"
#include "runner/ranks/process_group.h"
#include "runner/ranks/rank_reports.h"
#include "settings/settings.h"
#include "store/job_auth.h"
#include "store/tcp_store_server.h"

namespace hvdrun {
namespace {

// The hostfile srun reads (SLURM_HOSTFILE), removed when the job ends.
class Hostfile {
 public:
  explicit Hostfile(const std::string& text) {
    const char* tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/hvdrun-hosts.XXXXXX";
    const int fd = mkstemp(path.data());
    if (fd < 0) throw LaunchError{"cannot create a hostfile for srun in " + path};
    close(fd);
    path_ = path;
    std::ofstream out(path_);
    out << text;
    if (!out.flush()) {
      unlink(path_.c_str());  // no destructor runs for a constructor that throws
      throw LaunchError{"cannot write srun's hostfile " + path_};
    }
  }
  ~Hostfile() { unlink(path_.c_str()); }
  Hostfile(const Hostfile&) = delete;
  Hostfile& operator=(const Hostfile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::set<std::string> hosts_of(const std::vector<RankPlacement>& placements) {
  std::set<std::string> hosts;
  for (const RankPlacement& p : placements) hosts.insert(p.host);
  return hosts;
}

}  // namespace

std::string srun_hostfile_text(const std::vector<RankPlacement>& placements) {
  std::string text;
  for (const RankPlacement& p : placements) text += p.host + "\n";
  return text;
}

std::vector<std::string> srun_command(const Options& options,
                                      const std::vector<RankPlacement>& placements) {
  if (options.command.empty()) throw UsageError{"missing the command to run"};
  // The allocation's --ntasks-per-node (SLURM_NTASKS_PER_NODE, which srun
  // reads) need not fit the placement.
  std::vector<std::string> argv = {"env",
                                   "-u",
                                   "SLURM_NTASKS_PER_NODE",
                                   "srun",
                                   "--ntasks=" + std::to_string(placements.size()),
                                   "--nodes=" + std::to_string(hosts_of(placements).size()),
                                   "--distribution=arbitrary",
                                   "--quit-on-interrupt",
                                   "--label",
                                   "--mpi=none",
                                   "--export=ALL"};
  if (!options.output_filename.empty()) {
    // srun's %t is the task id: the rank.
    argv.push_back("--output=" + options.output_filename + "/rank.%t/output.log");
  }
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  return argv;
}

int run_gloo_in_slurm(const Options& options, const std::vector<RankPlacement>& placements) {
  if (find_in_path("srun").empty()) {
    throw LaunchError{
        "in a Slurm allocation hvdrun starts the ranks with srun, which is not on "
        "PATH"};
  }
  if (options.ssh_port || !options.ssh_identity_file.empty()) {
    std::cerr << "hvdrun: in a Slurm allocation srun starts the ranks: -p and -i do not apply\n";
  }
  std::vector<std::string> remote_hosts;
  for (const std::string& host : hosts_of(placements)) {
    if (!is_local_host(host)) remote_hosts.push_back(host);
  }
  const std::string secret = hvd::job_auth::new_secret();
  std::unique_ptr<hvd::TcpStoreServer> server = start_store(!remote_hosts.empty(), secret);
  const std::string host = rendezvous_host(options, remote_hosts);
  const std::string port = std::to_string(server->port());
  RankReports reports(server->port(), secret);
  if (!options.output_filename.empty()) {
    mkdir(options.output_filename.c_str(), 0755);
    for (const RankPlacement& p : placements) {
      mkdir((options.output_filename + "/rank." + std::to_string(p.rank)).c_str(), 0755);
    }
  }
  Hostfile hostfile(srun_hostfile_text(placements));

  using hvd::settings::Setting;
  using hvd::settings::variable;
  ChildSpec child;
  child.env = options.rank_settings;
  child.env[variable(Setting::kCpuOperations)] = "gloo";
  child.env[variable(Setting::kGlooRendezvousAddr)] = host;
  child.env[variable(Setting::kGlooRendezvousPort)] = port;
  child.env[variable(Setting::kHvdrunStore)] = host + ":" + port;
  // srun hands the environment to the ranks (--export=ALL): no command line shows it.
  child.env[variable(Setting::kJobSecret)] = secret;
  child.env["SLURM_HOSTFILE"] = hostfile.path();
  add_interface_settings(options, child.env);
  child.argv = srun_command(options, placements);
  child.srun_labels = true;
  child.stop_signal = SIGINT;  // --quit-on-interrupt: srun cancels the step
  child.timestamps = options.prefix_timestamp;
  if (options.verbose) {
    std::cerr << "hvdrun: Gloo mode through srun, rendezvous at " << host << ":" << port << ": "
              << join_quoted(child.argv) << "\n";
  }
  SrunOutput srun_output;
  JobWatch watch;
  // A rank that ends badly is a failure as soon as srun says so (the ranks
  // that see it go get the failure grace to say what they saw, then the
  // step is cancelled), or as soon as a rank reports one.
  watch.reported_failure = [&reports, &srun_output] {
    ReportedFailure failure = reports.first_failure();
    if (failure.summary.empty()) failure.summary = srun_output.failure();
    return failure;
  };
  watch.on_line = [&srun_output](const std::string& line) { srun_output.feed(line); };
  watch.failure_grace = kFailureGraceSeconds;
  const int size = static_cast<int>(placements.size());
  watch.all_accounted = [&reports, size] { return reports.all_accounted(size); };
  JobResult result = run_process_group({child}, kGraceSeconds, watch);
  if (result.exit_code != 0) {
    print_launcher_failure(result, child.argv.front(), srun_output.failure());
  }
  return result.exit_code;
}

}  // namespace hvdrun
