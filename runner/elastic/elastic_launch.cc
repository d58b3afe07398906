#include "runner/elastic/elastic_launch.h"

#include <unistd.h>

#include <iostream>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "runner/cli/text.h"
#include "runner/elastic/elastic_driver.h"
#include "runner/launch/gloo_launcher.h"
#include "runner/placement/environment.h"
#include "runner/placement/job_setup.h"
#include "runner/placement/network.h"
#include "settings/settings.h"
#include "store/job_auth.h"
#include "store/tcp_store.h"

namespace hvdrun {
namespace {

// The elastic driver's bounds from -np, --min-np, --max-np and the rest.
// Throws UsageError when -np lies outside them.
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

// How long a worker's init() waits for its round, past --elastic-timeout,
// so that hvdrun, which gives up first, is the one that explains why.
constexpr int kWorkerWaitMarginSeconds = 30;

}  // namespace

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
  JobResult result = run_process_group({}, kGraceSeconds, JobWatch{}, &control);
  if (result.exit_code != 0) print_failure(result);
  return result.exit_code;
}

}  // namespace hvdrun
