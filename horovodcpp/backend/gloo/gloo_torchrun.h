// A Gloo job that torchrun (or a plain env:// launch) started: the ranks
// take their places from RANK, LOCAL_RANK ... (settings/torchrun_environment.h),
// and rank 0 hosts the rendezvous store at MASTER_ADDR, on
// HOROVODCPP_GLOO_RENDEZVOUS_PORT or else MASTER_PORT + 1 (MASTER_PORT is
// torch's own store).
#pragma once

#include <chrono>
#include <memory>

#include "core/negotiation/controller.h"
#include "settings/torchrun_environment.h"
#include "store/store.h"

namespace hvd {

Topology torchrun_topology(const torchrun::Task& task);

std::shared_ptr<Store> torchrun_store(const torchrun::Task& task,
                                      std::chrono::milliseconds timeout);

}  // namespace hvd
