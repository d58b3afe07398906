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
// Over the launched ranks `world_ranks`, in that order (empty: all of them;
// a subset needs MPI: Horovod's init(comm=[...])). Throws InvalidArgument
// for a name this build does not have, or a subset it cannot run on.
Transport create_transport(const std::string& name, const std::vector<int>& world_ranks = {});

}  // namespace hvd
