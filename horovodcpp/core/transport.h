// The registry of transports: a name ("mpi", later "gloo") maps to a factory
// that builds the Controller and Backend of that communication library.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/controller.h"

namespace hvd {

struct Transport {
  std::unique_ptr<Controller> controller;
  std::unique_ptr<Backend> backend;
};

// Names of the transports this build has, in order of preference.
std::vector<std::string> available_transports();
// Throws InvalidArgument for a name this build does not have.
Transport create_transport(const std::string& name);

}  // namespace hvd
