// MpiProcessSetChannel: process-set changes over MPI. A duplicate of
// MPI_COMM_WORLD of its own carries the agreement exchange and the
// MPI_Comm_split that gives each set its communicator, so the API thread
// never touches a coordinator's communicators. A set's controller comes
// from the factory the composition gives (the control plane it chose for
// MPI mode, registry/transports.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/mpi/mpi_context.h"
#include "core/process_sets/process_set_channel.h"

namespace hvd {

class MpiProcessSetChannel : public ProcessSetChannel {
 public:
  using ControllerFactory = std::unique_ptr<Controller> (*)(const std::shared_ptr<MpiContext>&);

  // `world`: the job-wide context (MPI is initialized; its rank is ours).
  MpiProcessSetChannel(std::shared_ptr<MpiContext> world, ControllerFactory make_controller);
  ~MpiProcessSetChannel() override;

  // Non-blocking collectives polled against the deadline: MPI cannot cancel
  // a collective, so a timed-out exchange stays pending (its buffers and
  // communicator are deliberately leaked).
  std::vector<std::string> allgather(const std::string& message,
                                     std::chrono::milliseconds timeout) override;
  Transport create_transport(int id, const std::vector<int>& ranks) override;
  // "host-of-rank-R": R is the lowest global rank of this rank's
  // MPI_COMM_TYPE_SHARED split (the one MpiContext's local_rank comes from).
  const std::vector<std::string>& host_keys() override;
  std::string cannot_create_transports() const override;

 private:
  std::shared_ptr<MpiContext> world_;
  ControllerFactory make_controller_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool abandoned_ = false;          // a timed-out exchange is still pending on comm_
  std::vector<std::string> hosts_;  // host_keys(), once learned
};

}  // namespace hvd
