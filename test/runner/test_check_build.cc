// hvdrun -cb: horovodrun --check-build's layout, filled with this build.
#include <gtest/gtest.h>

#include "runner/cli/check_build.h"

namespace hvdrun {
namespace {

TEST(CheckBuild, HorovodsLayout) {
  BuildInfo info;
  info.version = "0.1.0";
  info.torch = true;
  info.mpi = true;
  info.gloo = true;
  EXPECT_EQ(check_build_text(info),
            "horovodcpp v0.1.0:\n"
            "\n"
            "Available Frameworks:\n"
            "    [ ] TensorFlow\n"
            "    [X] PyTorch\n"
            "    [ ] MXNet\n"
            "\n"
            "Available Controllers:\n"
            "    [X] MPI\n"
            "    [X] Gloo\n"
            "\n"
            "Available Tensor Operations:\n"
            "    [ ] NCCL\n"
            "    [ ] DDL\n"
            "    [ ] CCL\n"
            "    [X] MPI\n"
            "    [X] Gloo\n");
  info = BuildInfo{"2.0", true, false, false, true, true};
  std::string text = check_build_text(info);
  EXPECT_NE(text.find("[X] TensorFlow"), std::string::npos);
  EXPECT_NE(text.find("[ ] MPI"), std::string::npos);
  EXPECT_NE(text.find("[X] NCCL"), std::string::npos);
}

TEST(CheckBuild, ImportProbe) {
  EXPECT_TRUE(python_module_imports("os", 60));
  EXPECT_FALSE(python_module_imports("no_such_module_hvdrun_test", 60));
}

}  // namespace
}  // namespace hvdrun
