#include "registry/built_backends.h"

#include "registry/device_registry.h"
#include "registry/transports.h"

namespace hvd {

BackendFactory built_backends() {
  BackendFactory factory;
  factory.transports = &available_transports;
  factory.create_transport = &create_transport;
  factory.create_device_operations = [](Controller& controller, const std::string& cpu_transport,
                                        ProcessSetChannel* channel, Timeline* timeline) {
    return create_device_operations(controller, cpu_transport, channel, timeline);
  };
  return factory;
}

}  // namespace hvd
