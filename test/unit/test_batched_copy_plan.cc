// Planning of the device fusion buffer's batched copies (no GPU needed).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "core/device/batched_copy_plan.h"

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
  for (const CopyLaunch& l :
       plan_batched_copies(pack_tasks({{a.data(), 3}, {b.data(), 2}}, buffer.data(), sizeof(float)),
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

// A joined rank's zeros keep their place in the fused buffer (the caller
// zeroes it) but are neither packed nor unpacked.
TEST(BatchedCopyPlan, JoinedZerosAreNullPiecesThatKeepTheirPlace) {
  std::vector<float> a = {1, 2}, zeros(3), b = {4}, buffer(6, 0.0f);
  std::vector<TensorEntry> entries(3);
  entries[0].input = entries[0].output = TensorView(a.data(), DataType::kFloat32, {2});
  entries[1].input = entries[1].output = TensorView(zeros.data(), DataType::kFloat32, {3});
  entries[1].joined = true;
  entries[2].input = entries[2].output = TensorView(b.data(), DataType::kFloat32, {1});
  const GroupPieces pieces = group_pieces({&entries[0], &entries[1], &entries[2]});
  EXPECT_TRUE(pieces.zeros);
  EXPECT_EQ(pieces.total, 6u);
  EXPECT_EQ(pieces.inputs[1].first, nullptr);
  EXPECT_FALSE(group_pieces({&entries[0], &entries[2]}).zeros);

  const std::vector<CopyTask> pack = pack_tasks(pieces.inputs, buffer.data(), sizeof(float));
  ASSERT_EQ(pack.size(), 2u);
  EXPECT_EQ(pack[1].dst, &buffer[5]);
  for (const CopyLaunch& l : plan_batched_copies(pack, sizeof(float))) {
    run_copy_launch_on_host(l, DataType::kFloat32, CopyScale{});
  }
  EXPECT_EQ(buffer, (std::vector<float>{1, 2, 0, 0, 0, 4}));
  const std::vector<CopyTask> unpack = unpack_tasks(buffer.data(), pieces.outputs, sizeof(float));
  ASSERT_EQ(unpack.size(), 2u);
  EXPECT_EQ(unpack[1].src, &buffer[5]);
  EXPECT_EQ(unpack[1].dst, b.data());
}

TEST(BatchedCopyPlan, LaunchFitsTheKernelParameterLimit) { EXPECT_LE(sizeof(CopyLaunch), 4096u); }

}  // namespace
}  // namespace hvd
