#include "backend/gloo/gloo_slurm.h"

#include <unistd.h>

#include "base/check.h"
#include "core/diagnostics/logging.h"
#include "settings/settings.h"
#include "store/tcp_store.h"
#include "store/tcp_store_server.h"

namespace hvd {
namespace {

using settings::Setting;

// The store's server with rank 0's own client of it, which closes first.
struct HostedStore {
  std::unique_ptr<TcpStoreServer> server;
  std::unique_ptr<TcpStore> client;
};

// HOROVODCPP_JOB_SECRET when the job script exports one; else a value that
// every task of the step can compute, which keeps out other jobs' strays
// but not a user who knows the job id (said once, by rank 0).
std::string step_secret(const slurm::StepTask& task) {
  if (settings::is_set(Setting::kJobSecret)) {
    const std::string secret = settings::read_string(Setting::kJobSecret);
    HVD_CHECK(!secret.empty(), InvalidArgument, "HOROVODCPP_JOB_SECRET is set but empty");
    return secret;
  }
  if (task.rank == 0) {
    HVD_LOG(Warning) << "Slurm step " << task.job_id << "." << task.step_id
                     << ": the rendezvous store is guarded only by the job's ids; export "
                        "HOROVODCPP_JOB_SECRET (e.g. $(openssl rand -hex 16)) in the job "
                        "script to keep other users of the nodes out";
  }
  return "slurm-" + task.job_id + "." + task.step_id + "-uid" + std::to_string(::getuid());
}

}  // namespace

Topology slurm_topology(const slurm::StepTask& task) {
  Topology topology;
  topology.rank = task.rank;
  topology.size = task.size;
  topology.local_rank = task.local_rank;
  topology.local_size = task.local_size;
  topology.cross_rank = task.cross_rank;
  topology.cross_size = task.cross_size;
  return topology;
}

std::shared_ptr<Store> slurm_step_store(const slurm::StepTask& task,
                                        std::chrono::milliseconds timeout) {
  const int port = settings::is_set(Setting::kGlooRendezvousPort)
                       ? static_cast<int>(settings::read_int(Setting::kGlooRendezvousPort))
                       : slurm::derived_rendezvous_port(task);
  const std::string& node = task.nodes.front();  // where srun runs task 0
  const std::string step = "Slurm step " + task.job_id + "." + task.step_id;
  const std::string secret = step_secret(task);
  if (task.rank != 0) {
    try {
      return std::make_shared<TcpStore>(node, port, timeout, secret);
    } catch (const Error& e) {
      HVD_THROW(BackendError, step << ": rank " << task.rank
                                   << " cannot reach the rendezvous store of rank 0 at " << node
                                   << ":" << port << " (did rank 0 start? its error says why "
                                   << "not): " << e.what());
    }
  }
  // The others look for the store on the step's first node.
  HVD_CHECK(task.node == node, InvalidArgument,
            step << ": rank 0 runs on " << task.node << ", not on the step's first node " << node
                 << ", where the other ranks look for its rendezvous store (srun "
                    "--distribution=arbitrary with another node first?): put rank 0 on "
                 << node << " (or launch with hvdrun, which runs the store itself)");
  auto hosted = std::make_shared<HostedStore>();
  try {
    hosted->server = std::make_unique<TcpStoreServer>("0.0.0.0", port, secret);
  } catch (const Error& e) {
    HVD_THROW(BackendError, step << ": rank 0 cannot host the rendezvous store on port " << port
                                 << " of " << node << " (another job may hold it; export "
                                 << "HOROVODCPP_GLOO_RENDEZVOUS_PORT=<a free port> in the job "
                                 << "script): " << e.what());
  }
  hosted->client = std::make_unique<TcpStore>("127.0.0.1", port, timeout, secret);
  HVD_LOG(Debug) << step << ": rendezvous store on " << node << ":" << port;
  return std::shared_ptr<Store>(hosted, hosted->client.get());
}

}  // namespace hvd
