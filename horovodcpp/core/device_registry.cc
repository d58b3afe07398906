// The one place that knows which device operations this build has.
#include "core/device_operations.h"
#include "core/gpu_operations.h"
#include "core/transport.h"

#if HVD_HAVE_NCCL
#include "backend/nccl/nccl_operations.h"
#endif

namespace hvd {

std::unique_ptr<DeviceOperations> create_device_operations(Controller& controller,
                                                           const std::string& cpu_transport) {
  std::vector<std::string> built = available_transports();
#if HVD_HAVE_NCCL
  built.insert(built.begin(), "nccl");
#endif
  const std::string chosen = gpu_operations_from_env(built, cpu_transport);
#if HVD_HAVE_NCCL
  if (chosen == "nccl") return std::make_unique<NcclOperations>(controller);
#endif
  (void)controller;
  return nullptr;  // MPI/Gloo staging through host memory: not yet
}

}  // namespace hvd
