// The registry of transports: a name ("mpi", "gloo") maps to a factory that
// builds the Controller and Backend of that communication library over every
// rank of the job, and the channel that builds process sets' transports.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/execution/backend.h"
#include "core/negotiation/controller.h"
#include "core/process_sets/process_set_channel.h"

namespace hvd {

struct Transport {
  std::unique_ptr<Controller> controller;
  std::unique_ptr<Backend> backend;
  // Job-wide transports only (null in a process set's transport).
  std::unique_ptr<ProcessSetChannel> process_sets;
};

// A controller and a backend sharing one context: one initialization of the
// communication library, one topology.
template <typename ControllerType, typename BackendType, typename Context>
Transport transport_over(const std::shared_ptr<Context>& context) {
  Transport transport;
  transport.controller = std::make_unique<ControllerType>(context);
  transport.backend = std::make_unique<BackendType>(context);
  return transport;
}

// Names of the transports this build has, in order of preference.
std::vector<std::string> available_transports();
// Throws InvalidArgument for a name this build does not have.
Transport create_transport(const std::string& name);

}  // namespace hvd
