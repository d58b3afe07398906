// Which of hvdrun's environment variables travel to the ranks.
#pragma once

#include <map>
#include <string>

namespace hvdrun {

// The variables ranks need: HOROVODCPP_*, HOROVOD_*, NCCL_*, CUDA_*,
// PYTHONPATH, PATH, LD_LIBRARY_PATH (and OMPI_/PMIX_ are never forwarded).
std::map<std::string, std::string> forwarded_environment(
    const std::map<std::string, std::string>& env);
// The current process environment as a map.
std::map<std::string, std::string> current_environment();

}  // namespace hvdrun
