#include "backend/shm/two_level_backend.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "base/check.h"
#include "core/diagnostics/logging.h"
#include "core/negotiation/root_decides.h"
#include "core/process_sets/internal_set_ids.h"
#include "settings/settings.h"

namespace hvd {

TwoLevelBackend::TwoLevelBackend(std::unique_ptr<Backend> inner, ProcessSetChannel& channel,
                                 const HostLayout& layout)
    : ForwardingBackend(std::move(inner)),
      even_(layout.even()),
      rank_(layout.hosts[layout.host][layout.local]),
      local_(layout.local) {
  HVD_CHECK(inner_ != nullptr, InvalidArgument, "TwoLevelBackend needs an inner backend");
  name_ = std::string("shm+") + inner_->name();
  // Every rank creates every sub-transport in the same order (the channel's
  // calls are collective); the segments are set up afterwards, per host.
  Transport host;
  for (std::size_t h = 0; h < layout.hosts.size(); ++h) {
    if (layout.hosts[h].size() < 2) continue;
    Transport made = channel.create_transport(kShmHostSetId - static_cast<int>(h), layout.hosts[h]);
    if (static_cast<int>(h) == layout.host) host = std::move(made);
  }
  // Even hosts: one cross transport per local index; uneven: the first ranks only.
  const int crosses = even_ ? static_cast<int>(layout.hosts.front().size()) : 1;
  for (int l = 0; l < crosses; ++l) {
    Transport made = channel.create_transport(kShmCrossSetId - l, layout.cross(l));
    if (l == local_) cross_ = std::move(made);
  }
  if (host.controller) {
    host_controller_ = std::move(host.controller);
    host_ = std::make_unique<ShmBackend>(std::move(host.backend), *host_controller_);
    // Its failures name the job's ranks, also in the notices passed on below.
    host_->name_ranks(layout.hosts[layout.host]);
    shares_.resize(layout.hosts[layout.host].size());
  }
}

BackendCapabilities TwoLevelBackend::capabilities() const {
  BackendCapabilities capabilities;
  capabilities.half_reduction_in_float32 = false;
  return capabilities;
}

void TwoLevelBackend::allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) {
  HVD_CHECK(op == ReduceOp::kSum || op == ReduceOp::kMin || op == ReduceOp::kMax ||
                op == ReduceOp::kProduct,
            InvalidArgument,
            "the two-level backend reduces with Sum, Min, Max or Product, not op "
                << static_cast<int>(op));
  HVD_CHECK(!broken_, RankFailure,
            "two-level allreduce: an earlier one failed; the ranks are no longer in step");
  if (count == 0) return;
  try {
    run_stages(buffer, count, dtype, op);
  } catch (const std::exception& e) {
    // Nobody must wait for this rank: its host peers learn it through the
    // segment (which numbers ranks within the host, so name the job's rank),
    // its cross-host peers from the connections closed with their transport.
    // Both hear this rank's notice in their transport's roll call, which
    // passes on whom it blames: they would blame this rank otherwise.
    broken_ = true;
    if (host_) {
      host_->abandon("(rank " + std::to_string(rank_) +
                     " of the job) its two-level allreduce failed: " + e.what());
    }
    const auto* failure = dynamic_cast<const RankFailure*>(&e);
    const std::vector<int> blamed = failure ? failure->ranks() : std::vector<int>{};
    for (Controller* stage : {host_controller_.get(), cross_.controller.get()}) {
      if (stage == nullptr) continue;
      try {
        stage->give_up("two-level allreduce", e.what(), blamed, /*listen=*/false);
      } catch (const Error&) {
        // That stage's verdict; the error to report is `e`.
      }
    }
    cross_ = Transport{};
    throw;
  }
}

void TwoLevelBackend::run_stages(void* buffer, std::size_t count, DataType dtype, ReduceOp op) {
  if (!even_) {
    if (host_) host_->allreduce(buffer, count, dtype, op);
    if (cross_.backend) cross_.backend->allreduce(buffer, count, dtype, op);
    if (host_) host_->broadcast(buffer, count, dtype, 0);
    return;
  }
  const std::size_t ranks = shares_.size();
  for (std::size_t l = 0; l < ranks; ++l) {
    shares_[l] = count * (l + 1) / ranks - count * l / ranks;
  }
  const std::size_t mine = shares_[static_cast<std::size_t>(local_)];
  const std::size_t bytes = std::max<std::size_t>(mine * dtype_size(dtype), 1);
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  host_->reducescatter(buffer, scratch_.data(), shares_, dtype, op);
  if (mine > 0) cross_.backend->allreduce(scratch_.data(), mine, dtype, op);
  host_->allgatherv(scratch_.data(), buffer, shares_, dtype);
}

std::unique_ptr<Backend> maybe_stage_hosts(std::unique_ptr<Backend> backend, Controller& controller,
                                           ProcessSetChannel& channel) {
  const Topology& topology = controller.topology();
  // One rank, or one host (maybe_use_shm's case), or one rank per host.
  if (topology.size < 2 || topology.local_size == topology.size) return backend;
  if (!shm_agreed(controller)) return backend;

  const HostLayout layout = host_layout(channel.host_keys(), topology.rank);
  std::size_t largest = 0;
  for (const std::vector<int>& ranks : layout.hosts) largest = std::max(largest, ranks.size());
  // Every rank must agree to stage, or none does.
  const bool able = every_rank_can_split_hosts(layout, controller, channel,
                                               "shared memory is not used inside hosts");
  if (!able || layout.hosts.size() < 2 || largest < 2) return backend;

  auto two_level = std::make_unique<TwoLevelBackend>(std::move(backend), channel, layout);
  if (topology.rank == 0) {
    HVD_LOG(Info) << two_level->name() << ": " << layout.hosts.size() << " hosts ("
                  << (layout.even() ? "even" : "uneven")
                  << "); allreduce through shared memory inside each host";
  }
  return two_level;
}

}  // namespace hvd
