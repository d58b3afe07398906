// hvdrun -cb / --check-build: what this build can do, in the layout of
// horovodrun --check-build, so that scripts and people reading it find the
// same lines:
//
//   horovodcpp v0.1.0:
//
//   Available Frameworks:
//       [X] TensorFlow
//       [X] PyTorch
//       [ ] MXNet
//   ...
#pragma once

#include <string>

namespace hvdrun {

struct BuildInfo {
  std::string version;
  bool tensorflow = false;  // horovodcpp.tensorflow imports
  bool torch = false;       // horovodcpp.torch imports
  bool mpi = false;         // the MPI transport was built
  bool gloo = false;        // the Gloo transport was built
  bool nccl = false;        // NCCL tensor operations were built
};

std::string check_build_text(const BuildInfo& info);

// Whether `python3 -c "import MODULE"` (python3 from PATH, as job scripts
// run it) succeeds within `seconds`; its output is discarded.
bool python_module_imports(const std::string& module, int seconds);

}  // namespace hvdrun
