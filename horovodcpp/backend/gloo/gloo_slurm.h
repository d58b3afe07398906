// A Gloo job that `srun` started with no launcher: the ranks take their
// places from Slurm's environment (settings/slurm_environment.h), and rank
// 0 hosts the rendezvous store on the first node of the step, at
// HOROVODCPP_GLOO_RENDEZVOUS_PORT or else a port derived from the job and
// step ids; the others connect to it there.
#pragma once

#include <chrono>
#include <memory>

#include "core/negotiation/controller.h"
#include "settings/slurm_environment.h"
#include "store/store.h"

namespace hvd {

Topology slurm_topology(const slurm::StepTask& task);

// Rank 0's store (the server lives as long as the returned pointer), or
// another rank's client of it. Throws BackendError naming the node and
// port when rank 0 cannot bind it or a rank cannot reach it in `timeout`.
std::shared_ptr<Store> slurm_step_store(const slurm::StepTask& task,
                                        std::chrono::milliseconds timeout);

}  // namespace hvd
