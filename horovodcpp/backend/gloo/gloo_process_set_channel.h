// GlooProcessSetChannel: process-set changes over Gloo. The agreement
// exchange goes through the job's rendezvous store (each rank writes its
// message under a key of its own and reads the others', each read bounded by
// the timeout), and each set gets Gloo contexts of its own that its members
// connect through the same store, so no coordinator's context is touched.
// A set's controller comes from the factory the composition gives (the
// control plane it chose for Gloo mode, registry/transports.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/gloo/gloo_context.h"
#include "core/process_sets/process_set_channel.h"

namespace hvd {

class GlooProcessSetChannel : public ProcessSetChannel {
 public:
  using ControllerFactory = std::unique_ptr<Controller> (*)(const std::shared_ptr<GlooContext>&);

  GlooProcessSetChannel(std::shared_ptr<GlooContext> world, ControllerFactory make_controller);

  std::vector<std::string> allgather(const std::string& message,
                                     std::chrono::milliseconds timeout) override;
  Transport create_transport(int id, const std::vector<int>& ranks) override;
  // HOROVODCPP_HOSTNAME (hvdrun sets it per host), else the machine's hostname.
  const std::vector<std::string>& host_keys() override;

 private:
  std::shared_ptr<GlooContext> world_;
  ControllerFactory make_controller_;
  long long exchanges_ = 0;         // the n-th exchange of every rank uses the keys of n
  bool abandoned_ = false;          // an exchange timed out: the ranks' counts may differ
  std::vector<std::string> hosts_;  // each rank's host key (host_keys())
};

}  // namespace hvd
