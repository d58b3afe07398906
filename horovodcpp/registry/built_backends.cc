#include "registry/built_backends.h"

#include "registry/device_registry.h"
#include "registry/transports.h"

namespace hvd {

BackendFactory built_backends() {
  BackendFactory factory;
  factory.transports = &available_transports;
  factory.create_transport = &create_transport;
  factory.create_device_operations = &create_device_operations;
  return factory;
}

}  // namespace hvd
