// HOROVODCPP_GPU_OPERATIONS: defaults, aliases, and errors naming what is built.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/device/gpu_operations_choice.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

TEST(GpuOperations, DefaultsToNcclWhenBuilt) {
  EXPECT_EQ(choose_gpu_operations(std::nullopt, {"nccl", "mpi", "gloo"}, "gloo"), "nccl");
  EXPECT_EQ(choose_gpu_operations(std::string(), {"nccl", "mpi"}, "mpi"), "nccl");
}

TEST(GpuOperations, DefaultsToTheJobTransportWithoutNccl) {
  EXPECT_EQ(choose_gpu_operations(std::nullopt, {"mpi", "gloo"}, "gloo"), "gloo");
}

TEST(GpuOperations, ExplicitChoiceIsCaseInsensitive) {
  EXPECT_EQ(choose_gpu_operations(std::string("MPI"), {"nccl", "mpi"}, "mpi"), "mpi");
  EXPECT_EQ(choose_gpu_operations(std::string("gloo"), {"nccl", "gloo"}, "gloo"), "gloo");
}

TEST(GpuOperations, UnknownOrMissingIsAnError) {
  try {
    choose_gpu_operations(std::string("ddl"), {"nccl"}, "mpi");
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'ddl' is not one of nccl, mpi, gloo"), std::string::npos)
        << e.what();
  }
  try {
    choose_gpu_operations(std::string("nccl"), {"mpi", "gloo"}, "mpi");
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("this build has: mpi, gloo"), std::string::npos)
        << e.what();
  }
}

TEST(GpuOperations, HierarchicalAllreduceWarnsWhenStaged) {
  EXPECT_EQ(staged_hierarchical_warning("nccl", true), "");
  EXPECT_EQ(staged_hierarchical_warning("gloo", false), "");
  const std::string warning = staged_hierarchical_warning("mpi", true);
  EXPECT_NE(warning.find("HOROVODCPP_HIERARCHICAL_ALLREDUCE=1 is ignored"), std::string::npos);
  EXPECT_NE(warning.find("staged through host memory onto mpi"), std::string::npos) << warning;
}

TEST(GpuOperations, HorovodVariableIsAnAlias) {
  setenv("HOROVOD_GPU_OPERATIONS", "mpi", 1);
  EXPECT_EQ(gpu_operations_from_env({"nccl", "mpi"}, "mpi"), "mpi");
  setenv("HOROVODCPP_GPU_OPERATIONS", "nccl", 1);
  EXPECT_EQ(gpu_operations_from_env({"nccl", "mpi"}, "mpi"), "nccl");
  unsetenv("HOROVOD_GPU_OPERATIONS");
  unsetenv("HOROVODCPP_GPU_OPERATIONS");
}

}  // namespace
}  // namespace hvd
