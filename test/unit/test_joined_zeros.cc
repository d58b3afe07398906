// A joined rank's zeros: host zeros kept for the cycle, or an entry of
// dtype and shape only for a device that zeroes its own memory.
#include <gtest/gtest.h>

#include "core/execution/joined_zeros.h"

namespace hvd {
namespace {

Request agreed(Device device) {
  Request request;
  request.name = "grad";
  request.op_type = OpType::kAllreduce;
  request.dtype = DataType::kFloat32;
  request.shape = {2, 3};
  request.device = device;
  return request;
}

TEST(JoinedZerosTest, HostZerosOfTheAgreedShape) {
  JoinedZeros zeros;
  const TensorEntry entry = zeros.make(agreed(Device::cpu()), /*device_zeroes_itself=*/false);
  EXPECT_TRUE(entry.joined);
  ASSERT_NE(entry.work, nullptr);
  EXPECT_EQ(entry.request.name, "grad");
  ASSERT_EQ(entry.input.num_elements(), 6u);
  ASSERT_NE(entry.input.data, nullptr);
  EXPECT_EQ(entry.output.data, entry.input.data);
  const float* values = static_cast<const float*>(entry.input.data);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(values[i], 0.0f) << i;
}

TEST(JoinedZerosTest, ADeviceThatZeroesItselfGetsNoHostMemory) {
  JoinedZeros zeros;
  const TensorEntry entry = zeros.make(agreed(Device::cuda(0)), /*device_zeroes_itself=*/true);
  EXPECT_TRUE(entry.joined);
  EXPECT_EQ(entry.input.data, nullptr);
  EXPECT_EQ(entry.input.num_elements(), 6u);
  EXPECT_EQ(entry.input.device, Device::cuda(0));
}

TEST(JoinedZerosTest, OnlyTheListedRanksHaveJoined) {
  Response response;
  response.joined_ranks = {0, 2};
  EXPECT_TRUE(has_joined(response, 2));
  EXPECT_FALSE(has_joined(response, 1));
}

}  // namespace
}  // namespace hvd
