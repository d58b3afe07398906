// The one place that knows which device operations this build has.
#include "registry/device_registry.h"

#include "core/device/device_operations.h"
#include "core/device/gpu_operations_choice.h"
#include "core/diagnostics/logging.h"
#include "registry/transports.h"
#include "settings/settings.h"

#if HVD_HAVE_NCCL
#include "backend/nccl/nccl_operations.h"
#endif
#if HVD_HAVE_CUDA
#include "gpu/staged_operations.h"
#endif

namespace hvd {

std::vector<std::string> available_gpu_operations() {
  std::vector<std::string> built;
#if HVD_HAVE_NCCL
  built.push_back("nccl");
#endif
#if HVD_HAVE_CUDA
  for (const std::string& name : available_transports()) built.push_back(name);
#endif
  return built;
}

int built_nccl_version() {
#if HVD_HAVE_NCCL
  return NCCL_VERSION_CODE;
#else
  return 0;
#endif
}

std::unique_ptr<DeviceOperations> create_device_operations(Controller& controller,
                                                           const std::string& cpu_transport,
                                                           ProcessSetChannel* channel,
                                                           Timeline* timeline) {
  std::vector<std::string> built = available_transports();
#if HVD_HAVE_NCCL
  built.insert(built.begin(), "nccl");
#endif
  const std::string chosen = gpu_operations_from_env(built, cpu_transport);
#if HVD_HAVE_CUDA
  const bool hierarchical = settings::read_bool(settings::Setting::kHierarchicalAllreduce);
#endif
#if HVD_HAVE_NCCL
  if (chosen == "nccl") {
    return std::make_unique<NcclOperations>(
        controller, maybe_hierarchical_allreduce(controller, channel, hierarchical), timeline);
  }
#endif
#if HVD_HAVE_CUDA
  // Once per job (the global set has the channel), as the NCCL path warns.
  const std::string warning = staged_hierarchical_warning(chosen, hierarchical);
  if (!warning.empty() && channel != nullptr && controller.topology().rank == 0) {
    HVD_LOG(Warning) << warning;
  }
  // mpi or gloo: staged through pinned host memory onto the set's CPU backend.
  return std::make_unique<StagedOperations>(cpu_transport, timeline);
#else
  (void)controller;
  (void)channel;
  (void)timeline;
  return nullptr;  // no CUDA in this build: CUDA tensors are refused
#endif
}

}  // namespace hvd
