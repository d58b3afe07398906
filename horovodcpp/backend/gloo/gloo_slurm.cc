#include "backend/gloo/gloo_slurm.h"

#include <unistd.h>

#include "backend/gloo/rank0_store.h"
#include "base/check.h"
#include "settings/settings.h"

namespace hvd {

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
  Rank0StorePlace place;
  place.job = "Slurm step " + task.job_id + "." + task.step_id;
  place.host = task.nodes.front();  // where srun runs task 0
  place.port = settings::is_set(settings::Setting::kGlooRendezvousPort)
                   ? static_cast<int>(settings::read_int(settings::Setting::kGlooRendezvousPort))
                   : slurm::derived_rendezvous_port(task);
  place.secret = job_secret_or(
      "slurm-" + task.job_id + "." + task.step_id + "-uid" + std::to_string(::getuid()),
      /*guessable=*/true, place.job, task.rank);
  // The others look for the store on the step's first node.
  HVD_CHECK(task.rank != 0 || task.node == place.host, InvalidArgument,
            place.job << ": rank 0 runs on " << task.node << ", not on the step's first node "
                      << place.host
                      << ", where the other ranks look for its rendezvous store (srun "
                         "--distribution=arbitrary with another node first?): put rank 0 on "
                      << place.host << " (or launch with hvdrun, which runs the store itself)");
  return rank0_store(place, task.rank, timeout);
}

}  // namespace hvd
