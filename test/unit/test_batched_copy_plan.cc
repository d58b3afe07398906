// Planning of the device fusion buffer's batched copies (no GPU needed).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "core/batched_copy_plan.h"

namespace hvd {
namespace {

TEST(BatchedCopyPlan, PacksTasksIntoLaunchesOfAtMost64) {
  std::vector<float> src(200), dst(200);
  std::vector<CopyTask> tasks;
  for (int i = 0; i < 130; ++i) tasks.push_back({&src[i], &dst[i], 1});
  const auto launches = plan_batched_copies(tasks, sizeof(float));
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].num_tasks, 64);
  EXPECT_EQ(launches[1].num_tasks, 64);
  EXPECT_EQ(launches[2].num_tasks, 2);
  EXPECT_EQ(launches[2].tasks[1].src, &src[129]);
  EXPECT_EQ(launches[0].max_count, 1u);
}

TEST(BatchedCopyPlan, SplitsLongTasksAndDropsEmptyOnes) {
  std::vector<double> src(10), dst(10);
  const auto launches =
      plan_batched_copies({{src.data(), dst.data(), 10}, {src.data(), dst.data(), 0}},
                          sizeof(double), /*max_task_elements=*/4);
  ASSERT_EQ(launches.size(), 1u);
  ASSERT_EQ(launches[0].num_tasks, 3);
  EXPECT_EQ(launches[0].tasks[1].src, &src[4]);
  EXPECT_EQ(launches[0].tasks[1].dst, &dst[4]);
  EXPECT_EQ(launches[0].tasks[2].count, 2u);
  EXPECT_EQ(launches[0].max_count, 4u);
}

TEST(BatchedCopyPlan, PackThenUnpackRoundTripsWithScaling) {
  std::vector<float> a = {1, 2, 3}, b = {4, 5}, out_a(3), out_b(2), buffer(5);
  CopyScale prescale{1.0, 2.0};
  for (const CopyLaunch& l : plan_batched_copies(
           pack_tasks({{a.data(), 3}, {b.data(), 2}}, buffer.data(), sizeof(float)),
           sizeof(float))) {
    run_copy_launch_on_host(l, DataType::kFloat32, prescale);
  }
  EXPECT_EQ(buffer, (std::vector<float>{2, 4, 6, 8, 10}));
  CopyScale average{2.0, 1.0};
  for (const CopyLaunch& l : plan_batched_copies(
           unpack_tasks(buffer.data(), {{out_a.data(), 3}, {out_b.data(), 2}}, sizeof(float)),
           sizeof(float))) {
    run_copy_launch_on_host(l, DataType::kFloat32, average);
  }
  EXPECT_EQ(out_a, a);
  EXPECT_EQ(out_b, b);
}

TEST(BatchedCopyPlan, LaunchFitsTheKernelParameterLimit) {
  EXPECT_LE(sizeof(CopyLaunch), 4096u);
}

}  // namespace
}  // namespace hvd
