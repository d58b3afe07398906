#include "core/device/gpu_operations_choice.h"

#include <algorithm>
#include <cctype>

#include "base/check.h"
#include "settings/settings.h"

namespace hvd {
namespace {

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::string choose_gpu_operations(const std::optional<std::string>& setting,
                                  const std::vector<std::string>& built,
                                  const std::string& cpu_transport) {
  if (!setting || setting->empty()) return has(built, "nccl") ? "nccl" : cpu_transport;
  const std::string name = lower(*setting);
  HVD_CHECK(name == "nccl" || name == "mpi" || name == "gloo", InvalidArgument,
            "HOROVODCPP_GPU_OPERATIONS='" << *setting << "' is not one of nccl, mpi, gloo");
  HVD_CHECK(has(built, name), InvalidArgument,
            "HOROVODCPP_GPU_OPERATIONS=" << name << " but this build has: " << joined(built));
  return name;
}

std::string gpu_operations_from_env(const std::vector<std::string>& built,
                                    const std::string& cpu_transport) {
  return choose_gpu_operations(settings::read_text(settings::Setting::kGpuOperations), built,
                               cpu_transport);
}

std::string staged_hierarchical_warning(const std::string& chosen, bool hierarchical) {
  if (!hierarchical || chosen == "nccl") return "";
  const std::string why = "CUDA tensors are staged through host memory onto " + chosen;
  return "HOROVODCPP_HIERARCHICAL_ALLREDUCE=1 is ignored: " + why + ", and it applies to NCCL only";
}

}  // namespace hvd
