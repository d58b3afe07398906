#include "backend/gloo/gloo_torchrun.h"

#include <unistd.h>

#include "backend/gloo/rank0_store.h"
#include "settings/settings.h"

namespace hvd {

Topology torchrun_topology(const torchrun::Task& task) {
  Topology topology;
  topology.rank = task.rank;
  topology.size = task.size;
  topology.local_rank = task.local_rank;
  topology.local_size = task.local_size;
  // Every node runs local_size ranks: each has one of every local rank.
  topology.cross_rank = task.node_rank;
  topology.cross_size = task.nodes;
  return topology;
}

std::shared_ptr<Store> torchrun_store(const torchrun::Task& task,
                                      std::chrono::milliseconds timeout) {
  Rank0StorePlace place;
  const std::string endpoint = task.master_addr + ":" + std::to_string(task.master_port);
  place.job = task.run_id.empty() ? "the job of MASTER_ADDR:MASTER_PORT " + endpoint
                                  : "torchrun job " + task.run_id;
  place.host = task.master_addr;
  place.port = settings::is_set(settings::Setting::kGlooRendezvousPort)
                   ? static_cast<int>(settings::read_int(settings::Setting::kGlooRendezvousPort))
                   : task.master_port + 1;
  // torchrun --standalone draws a random run id, which only the job's
  // processes see; a static rendezvous's is "none".
  const bool guessable = task.run_id.empty() || task.run_id == "none";
  place.secret = job_secret_or(
      "torchrun-" + task.run_id + "-" + endpoint + "-uid" + std::to_string(::getuid()), guessable,
      place.job, task.rank);
  return rank0_store(place, task.rank, timeout);
}

}  // namespace hvd
