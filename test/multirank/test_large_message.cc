// Tensors of more than 2^31 - 1 elements through the public API: the MPI
// backend must split them, since MPI counts are int.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "horovodcpp/horovodcpp.h"

namespace {

constexpr std::int64_t kOverInt = (std::int64_t{1} << 31) + 7;

// Wraps modulo 256 without a division, so checking 2^31 elements is quick.
std::uint8_t value_at(std::int64_t i, int rank) {
  return static_cast<std::uint8_t>(i * 7 + 3 * rank);
}

TEST(LargeMessageTest, AllreduceSumWrapsAndCoversEveryElement) {
  const int rank = hvd::rank(), size = hvd::size();
  std::vector<std::uint8_t> data(kOverInt);
  for (std::int64_t i = 0; i < kOverInt; ++i) data[i] = value_at(i, rank);
  hvd::allreduce(hvd::view(data), "large.allreduce", hvd::ReduceOp::kSum);

  std::int64_t wrong = 0, first_wrong = -1;
  for (std::int64_t i = 0; i < kOverInt; ++i) {
    std::uint8_t expected = 0;
    for (int r = 0; r < size; ++r) expected += value_at(i, r);
    if (data[i] != expected && wrong++ == 0) first_wrong = i;
  }
  EXPECT_EQ(wrong, 0) << "first wrong element at index " << first_wrong;
}

TEST(LargeMessageTest, BroadcastReachesTheLastElement) {
  const int root = hvd::size() - 1;
  std::vector<std::uint8_t> data(kOverInt, static_cast<std::uint8_t>(hvd::rank()));
  if (hvd::rank() == root) data.back() = 200;
  hvd::broadcast(hvd::view(data), root, "large.broadcast");
  EXPECT_EQ(data.back(), 200);
  data.back() = static_cast<std::uint8_t>(root);
  EXPECT_EQ(std::count(data.begin(), data.end(), root), kOverInt);
}

TEST(LargeMessageTest, AllgatherWithTotalOverInt) {
  const std::int64_t rows = (std::int64_t{1} << 30) + 1;  // with 2 ranks: over 2^31 in total
  std::vector<std::uint8_t> mine(rows, static_cast<std::uint8_t>(10 + hvd::rank()));
  hvd::Tensor all = hvd::allgather(hvd::view(mine), "large.allgather");
  ASSERT_EQ(all.shape(), (std::vector<std::int64_t>{rows * hvd::size()}));
  const std::uint8_t* out = all.data_as<std::uint8_t>();
  for (int r = 0; r < hvd::size(); ++r) {
    EXPECT_EQ(std::count(out + r * rows, out + (r + 1) * rows, 10 + r), rows) << "rank " << r;
  }
}

}  // namespace
