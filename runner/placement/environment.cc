#include "runner/placement/environment.h"

#include <set>

extern char** environ;

namespace hvdrun {
namespace {

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// Variables hvdrun sets per rank: a value inherited from an outer job must
// not leak into this one.
bool is_placement_variable(const std::string& name) {
  static const std::set<std::string> suffixes = {
      "RANK",       "SIZE",     "LOCAL_RANK",           "LOCAL_SIZE",          "CROSS_RANK",
      "CROSS_SIZE", "HOSTNAME", "GLOO_RENDEZVOUS_ADDR", "GLOO_RENDEZVOUS_PORT"};
  for (const char* prefix : {"HOROVODCPP_", "HOROVOD_"}) {
    if (starts_with(name, prefix) && suffixes.count(name.substr(std::string(prefix).size()))) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::map<std::string, std::string> forwarded_environment(
    const std::map<std::string, std::string>& env) {
  static const std::set<std::string> exact = {"PATH", "LD_LIBRARY_PATH", "PYTHONPATH"};
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : env) {
    if (starts_with(name, "OMPI_") || starts_with(name, "PMIX_")) continue;
    bool wanted = exact.count(name) > 0 || starts_with(name, "HOROVODCPP_") ||
                  starts_with(name, "HOROVOD_") || starts_with(name, "NCCL_") ||
                  starts_with(name, "CUDA_");
    if (wanted && !is_placement_variable(name)) out.emplace(name, value);
  }
  return out;
}

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string text(*entry);
    std::size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env.emplace(text.substr(0, eq), text.substr(eq + 1));
  }
  return env;
}

}  // namespace hvdrun
