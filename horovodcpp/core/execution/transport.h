// A transport: the Controller and Backend of one communication library over
// a group of ranks (the job, or a process set), and for the job the channel
// that builds process sets' transports. Which transports exist is the
// registry's business (registry/transports.h).
#pragma once

#include <memory>

#include "core/execution/backend.h"
#include "core/negotiation/controller.h"
#include "core/process_sets/process_set_channel.h"

namespace hvd {

struct Transport {
  std::unique_ptr<Controller> controller;
  std::unique_ptr<Backend> backend;
  // Job-wide transports only (null in a process set's transport).
  std::unique_ptr<ProcessSetChannel> process_sets;
  // No write of this transport on a coordinator's thread can raise SIGPIPE
  // (every socket it writes passes MSG_NOSIGNAL, or it has none): the
  // coordinator need not block SIGPIPE around each cycle.
  bool sigpipe_free = false;
};

}  // namespace hvd
