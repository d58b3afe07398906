// What the Runtime asks of the composition layer (registry/): which
// transports this build has and how to build them and a process set's
// device operations. The top layer (api/) hands the registry's factory to
// the Runtime, so core/ never names a backend.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device/device_operations.h"
#include "core/diagnostics/timeline.h"
#include "core/execution/transport.h"
#include "core/negotiation/controller.h"
#include "core/process_sets/process_set_channel.h"

namespace hvd {

struct BackendFactory {
  // Names of the transports this build has, in order of preference.
  std::function<std::vector<std::string>()> transports;
  // The job-wide transport `name` over the launched ranks `world_ranks`
  // (empty: all of them); InvalidArgument for a name the build lacks.
  std::function<Transport(const std::string& name, const std::vector<int>& world_ranks)>
      create_transport;
  // A process set's DeviceOperations (null: CUDA tensors are refused); see
  // registry/device_registry.h for the arguments.
  std::function<std::unique_ptr<DeviceOperations>(Controller& controller,
                                                  const std::string& cpu_transport,
                                                  ProcessSetChannel* channel, Timeline* timeline)>
      create_device_operations;
};

}  // namespace hvd
