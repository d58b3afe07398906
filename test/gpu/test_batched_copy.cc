// The batched copy kernel against the host reference (scale_copy), for
// every dtype, with and without scaling, over several launches.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/device/batched_copy_plan.h"
#include "gpu/batched_copy.h"
#include "gpu_test_util.h"

namespace hvd {
namespace {

using test::DeviceBuffer;

class BatchedCopyTest : public test::GpuTest,
                        public ::testing::WithParamInterface<std::tuple<DataType, CopyScale>> {};

// Random bytes that are valid values of every dtype (bool: 0/1, floats small).
std::vector<unsigned char> random_values(DataType dtype, std::size_t count) {
  std::vector<unsigned char> bytes(count * dtype_size(dtype));
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-100, 100);
  for (std::size_t i = 0; i < count; ++i) {
    const double v = dtype == DataType::kBool ? (rng() & 1) : std::round(dist(rng) * 4) / 4;
    visit_dtype(dtype, [&](auto zero) {
      using T = decltype(zero);
      T value;
      if constexpr (std::is_same_v<T, bool>)
        value = v != 0;
      else if constexpr (std::is_unsigned_v<T>)
        value = static_cast<T>(std::abs(v));
      else
        value = static_cast<T>(static_cast<float>(v));
      std::memcpy(&bytes[i * sizeof(T)], &value, sizeof(T));
    });
  }
  return bytes;
}

TEST_P(BatchedCopyTest, MatchesTheHostReference) {
  const auto [dtype, scale] = GetParam();
  const std::size_t size = dtype_size(dtype);
  // 150 tensors of 0..3000 elements plus one long one: three launches,
  // the long one cut into pieces.
  std::vector<std::uint64_t> counts;
  for (int i = 0; i < 150; ++i) counts.push_back((i * 37) % 3001);
  counts.push_back(300000);
  std::uint64_t total = 0;
  for (std::uint64_t c : counts) total += c;
  const std::vector<unsigned char> input = random_values(dtype, total);
  DeviceBuffer<unsigned char> d_in(input), d_out(total * size);
  std::vector<unsigned char> expected(total * size);

  std::vector<CopyTask> device_tasks, host_tasks;
  std::uint64_t offset = 0;
  for (std::uint64_t c : counts) {
    device_tasks.push_back({d_in.get() + offset * size, d_out.get() + offset * size, c});
    host_tasks.push_back({input.data() + offset * size, expected.data() + offset * size, c});
    offset += c;
  }
  const auto launches = plan_batched_copies(device_tasks, size, /*max_task_elements=*/65536);
  ASSERT_GE(launches.size(), 3u);
  for (const CopyLaunch& launch : launches) launch_batched_copy(launch, dtype, scale, nullptr);
  for (const CopyLaunch& launch : plan_batched_copies(host_tasks, size)) {
    run_copy_launch_on_host(launch, dtype, scale);
  }
  HVD_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(d_out.to_host() == expected) << dtype_name(dtype);
}

std::vector<std::tuple<DataType, CopyScale>> cases() {
  std::vector<std::tuple<DataType, CopyScale>> out;
  for (int d = 0; d < kNumDataTypes; ++d) {
    const DataType dtype = static_cast<DataType>(d);
    out.emplace_back(dtype, CopyScale{});
    out.emplace_back(dtype, CopyScale{4.0, 1.0});  // Average over 4 ranks
    if (is_floating(dtype)) out.emplace_back(dtype, CopyScale{3.0, 0.5});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryDtype, BatchedCopyTest, ::testing::ValuesIn(cases()),
                         [](const auto& info) {
                           const CopyScale s = std::get<1>(info.param);
                           return std::string(dtype_name(std::get<0>(info.param))) +
                                  (s.identity()      ? "_copy"
                                   : s.factor == 1.0 ? "_average"
                                                     : "_scaled");
                         });

}  // namespace
}  // namespace hvd
