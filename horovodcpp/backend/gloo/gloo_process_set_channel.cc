#include "backend/gloo/gloo_process_set_channel.h"

#include <algorithm>
#include <utility>

#include "backend/gloo/gloo_backend.h"
#include "base/check.h"
#include "core/execution/transport.h"
#include "core/process_sets/subset_topology.h"

namespace hvd {

GlooProcessSetChannel::GlooProcessSetChannel(std::shared_ptr<GlooContext> world,
                                             ControllerFactory make_controller)
    : world_(std::move(world)), make_controller_(make_controller) {}

std::vector<std::string> GlooProcessSetChannel::allgather(const std::string& message,
                                                          std::chrono::milliseconds timeout) {
  HVD_CHECK(!abandoned_, BackendError, "an earlier process-set exchange timed out");
  const Topology& topology = world_->topology();
  if (!world_->store()) return {message};  // a single-rank job
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string prefix =
      world_->prefix() + "process_sets/" + std::to_string(exchanges_++) + "/";
  Store& store = *world_->store();
  store.set(prefix + std::to_string(topology.rank), message);
  std::vector<std::string> messages;
  for (int r = 0; r < topology.size; ++r) {
    if (r == topology.rank) {
      messages.push_back(message);
      continue;
    }
    const auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   deadline - std::chrono::steady_clock::now()),
                               std::chrono::milliseconds(1));
    try {
      messages.push_back(store.get(prefix + std::to_string(r), left));
    } catch (const Timeout&) {
      abandoned_ = true;
      HVD_THROW(Timeout, "rank " << r << " did not make the same process-set call within "
                                 << std::chrono::duration<double>(timeout).count()
                                 << " s (HOROVODCPP_PROCESS_SET_TIMEOUT_SECONDS)");
    }
  }
  return messages;
}

Transport GlooProcessSetChannel::create_transport(int id, const std::vector<int>& ranks) {
  const Topology& topology = world_->topology();
  // Every rank creates every set, so the first call's exchange is collective too.
  const std::vector<std::string>& hosts = host_keys();
  if (!std::binary_search(ranks.begin(), ranks.end(), topology.rank)) return Transport{};
  const Topology place = subset_topology(hosts, ranks, topology.rank);
  std::shared_ptr<GlooContext> context =
      world_->create_subset("process_set." + std::to_string(id), place, ranks);
  Transport transport;
  transport.controller = make_controller_(context);
  transport.backend = std::make_unique<GlooBackend>(context);
  return transport;
}

const std::vector<std::string>& GlooProcessSetChannel::host_keys() {
  if (hosts_.empty()) {
    // hvdrun's name for the host, from which it derived the topology.
    const std::string listed = listed_hostname();
    hosts_ = allgather(listed.empty() ? machine_hostname() : listed, world_->timeout());
  }
  return hosts_;
}

}  // namespace hvd
