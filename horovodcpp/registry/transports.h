// The registry of transports: a name ("mpi", "gloo") maps to a factory that
// builds the Controller and Backend of that communication library over every
// rank of the job (stacked with shared memory where the job allows), and
// the channel that builds process sets' transports.
#pragma once

#include <string>
#include <vector>

#include "core/execution/transport.h"

namespace hvd {

// Names of the transports this build has, in order of preference.
std::vector<std::string> available_transports();
// Throws InvalidArgument for a name this build does not have.
Transport create_transport(const std::string& name);

}  // namespace hvd
