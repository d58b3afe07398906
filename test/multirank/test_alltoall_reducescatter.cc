// Alltoall and reducescatter through the public API, every dtype, on any
// number of ranks. Every rank can compute every other rank's input and
// splits, so the expected outputs need no communication.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "horovodcpp/horovodcpp.h"
#include "test_helpers.h"

namespace hvdtest {
namespace {

int my_rank() { return hvd::rank(); }
int world() { return hvd::size(); }

std::string dtype_str(DataType dtype) { return hvd::dtype_name(dtype); }

// ---- Alltoall ---------------------------------------------------------------

enum class Splits {
  kEqual,       // no splits given: 2 rows to every rank
  kUneven,      // explicit, some zero
  kToRankZero,  // everything goes to rank 0: the others receive nothing
  kNothing,     // zero rows everywhere
};

// The splits `sender` passes (empty for kEqual).
std::vector<std::int64_t> splits_of(Splits kind, int sender, int size) {
  std::vector<std::int64_t> splits(size, 0);
  switch (kind) {
    case Splits::kEqual: return {};
    case Splits::kUneven:
      for (int j = 0; j < size; ++j) splits[j] = (sender + 2 * j) % 3;
      break;
    case Splits::kToRankZero: splits[0] = sender + 1; break;
    case Splits::kNothing: break;
  }
  return splits;
}

// The rows `sender` actually sends to each rank.
std::vector<std::int64_t> effective_splits(Splits kind, int sender, int size) {
  if (kind == Splits::kEqual) return std::vector<std::int64_t>(size, 2);
  return splits_of(kind, sender, size);
}

std::int64_t sum_of(const std::vector<std::int64_t>& values) {
  std::int64_t sum = 0;
  for (std::int64_t v : values) sum += v;
  return sum;
}

// Runs one alltoall of `dtype` with rows of `row_shape` and checks the
// output bytes, its shape and received_splits().
void check_alltoall(DataType dtype, Splits kind, const std::vector<std::int64_t>& row_shape,
                    bool blocking, const std::string& name) {
  const int size = world(), rank = my_rank();
  const std::uint64_t salt = salt_of(name);
  const std::int64_t row = num_elements(row_shape);
  std::vector<std::int64_t> shape = row_shape;
  shape.insert(shape.begin(), sum_of(effective_splits(kind, rank, size)));
  Buffer input(dtype, shape);
  input.fill(Pattern::kBits, salt, rank);

  // Expected: from each sender in rank order, the rows it sends to us.
  std::vector<std::int64_t> want_splits(size);
  for (int r = 0; r < size; ++r) want_splits[r] = effective_splits(kind, r, size)[rank];
  std::vector<std::int64_t> out_shape = row_shape;
  out_shape.insert(out_shape.begin(), sum_of(want_splits));
  Buffer expected(dtype, out_shape);
  hvd::visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    Store<T>* want = expected.as<Store<T>>();
    std::int64_t k = 0;
    for (int r = 0; r < size; ++r) {
      const std::vector<std::int64_t> sent = effective_splits(kind, r, size);
      std::int64_t first_row = 0;
      for (int j = 0; j < rank; ++j) first_row += sent[j];
      for (std::int64_t i = first_row * row; i < (first_row + sent[rank]) * row; ++i) {
        want[k++] = input_value<T>(Pattern::kBits, salt, r, i);
      }
    }
  });

  hvd::Tensor output;
  std::vector<std::int64_t> received;
  if (blocking) {
    output = hvd::alltoall(input.view(), splits_of(kind, rank, size), name, &received);
  } else {
    hvd::Work work = hvd::alltoall_async(input.view(), splits_of(kind, rank, size), name);
    work.wait(kPatience());
    output = work.output();
    received = work.received_splits();
  }
  EXPECT_EQ(output.dtype(), dtype) << name;
  EXPECT_EQ(output.shape(), out_shape) << name;
  EXPECT_EQ(received, want_splits) << name;
  if (output.shape() == out_shape) check_same_bytes(output.data(), expected, name);
}

class AlltoallDtypeTest : public testing::TestWithParam<DataType> {};

TEST_P(AlltoallDtypeTest, EqualSplits) {
  const DataType dtype = GetParam();
  check_alltoall(dtype, Splits::kEqual, {3}, false, "a2a.equal." + dtype_str(dtype));
}

TEST_P(AlltoallDtypeTest, UnevenSplitsWithZeros) {
  const DataType dtype = GetParam();
  check_alltoall(dtype, Splits::kUneven, {3}, false, "a2a.uneven." + dtype_str(dtype));
}

TEST_P(AlltoallDtypeTest, EverythingToRankZero) {
  const DataType dtype = GetParam();
  check_alltoall(dtype, Splits::kToRankZero, {2}, true, "a2a.to0." + dtype_str(dtype));
}

TEST_P(AlltoallDtypeTest, NothingSent) {
  const DataType dtype = GetParam();
  check_alltoall(dtype, Splits::kNothing, {4}, true, "a2a.nothing." + dtype_str(dtype));
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, AlltoallDtypeTest, testing::ValuesIn(all_dtypes()),
                         [](const testing::TestParamInfo<DataType>& info) {
                           return dtype_str(info.param);
                         });

TEST(AlltoallTest, OneDimensional) {
  check_alltoall(DataType::kFloat32, Splits::kUneven, {}, false, "a2a.1d");
  check_alltoall(DataType::kInt64, Splits::kEqual, {}, true, "a2a.1d.equal");
}

TEST(AlltoallTest, ThreeDimensionalLargeRows) {
  check_alltoall(DataType::kFloat64, Splits::kUneven, {5, 7}, false, "a2a.3d");
  // About 1 MiB per rank pair: several of Gloo's segments.
  check_alltoall(DataType::kFloat32, Splits::kEqual, {65536 + 3}, false, "a2a.big");
}

TEST(AlltoallTest, InputIsNotModified) {
  const std::string name = "a2a.input";
  Buffer input(DataType::kInt32, {2 * world(), 2});
  input.fill(Pattern::kBits, salt_of(name), my_rank());
  Buffer copy = input;
  hvd::alltoall(input.view(), {}, name);
  check_same_bytes(input.data(), copy, name);
}

TEST(AlltoallTest, ManyInFlight) {
  std::vector<Buffer> inputs;
  std::vector<hvd::Work> works;
  const int n = 20;
  for (int t = 0; t < n; ++t) {
    inputs.emplace_back(DataType::kInt32, std::vector<std::int64_t>{world() * (t % 3)});
    auto* values = inputs.back().as<std::int32_t>();
    for (std::int64_t i = 0; i < inputs.back().num_elements(); ++i) {
      values[i] = my_rank() * 1000 + t * 10 + static_cast<std::int32_t>(i / (t % 3));
    }
  }
  for (int t = n - 1; t >= 0; --t) {  // reverse order: negotiation sorts it out
    works.push_back(hvd::alltoall_async(inputs[t].view(), {}, "a2a.many." + std::to_string(t)));
  }
  for (int t = n - 1, w = 0; t >= 0; --t, ++w) {
    works[w].wait(kPatience());
    const hvd::Tensor& out = works[w].output();
    ASSERT_EQ(out.num_elements(), world() * (t % 3)) << t;
    for (int r = 0; r < world(); ++r) {
      for (int k = 0; k < t % 3; ++k) {
        EXPECT_EQ(out.data_as<std::int32_t>()[r * (t % 3) + k], r * 1000 + t * 10 + my_rank())
            << "tensor " << t << " from rank " << r;
      }
    }
  }
}

// ---- Reducescatter ----------------------------------------------------------

void check_reducescatter(DataType dtype, ReduceOp op, std::int64_t rows, std::int64_t cols,
                         double prescale, double postscale, const std::string& name) {
  const int size = world(), rank = my_rank();
  const std::uint64_t salt = salt_of(name);
  const Pattern p = pattern_for(op, dtype);
  Buffer input(dtype, {rows, cols});
  input.fill(p, salt, rank);
  const Buffer original = input;

  const std::vector<std::int64_t> out_shape = {share_rows(rows, size, rank), cols};
  const Buffer expected = reference_buffer(dtype, out_shape, op, p, salt, size, prescale, postscale,
                                           share_first_row(rows, size, rank) * cols);

  hvd::Work work = hvd::reducescatter_async(input.view(), name, op, prescale, postscale);
  work.wait(kPatience());
  const hvd::Tensor& output = work.output();
  EXPECT_EQ(output.dtype(), dtype) << name;
  ASSERT_EQ(output.shape(), out_shape) << name;
  Buffer got(dtype, out_shape);
  if (got.size_bytes() > 0) std::memcpy(got.data(), output.data(), got.size_bytes());
  check_values(got, expected, name);
  check_same_bytes(input.data(), original, name + " (input unchanged)");
}

using ReducescatterParam = std::tuple<DataType, ReduceOp>;

class ReducescatterTest : public testing::TestWithParam<ReducescatterParam> {
 protected:
  std::string name(const std::string& what) const {
    const auto [dtype, op] = GetParam();
    return "rs." + what + "." + dtype_str(dtype) + "." + hvd::reduce_op_name(op);
  }
};

TEST_P(ReducescatterTest, RowsDivisibleBySize) {
  const auto [dtype, op] = GetParam();
  check_reducescatter(dtype, op, 2 * world(), 3, 1.0, 1.0, name("div"));
}

TEST_P(ReducescatterTest, RowsNotDivisibleBySize) {
  const auto [dtype, op] = GetParam();
  check_reducescatter(dtype, op, 2 * world() + 1, 5, 1.0, 1.0, name("nodiv"));
  check_reducescatter(dtype, op, 3 * world() + world() - 1, 2, 1.0, 1.0, name("nodiv2"));
}

TEST_P(ReducescatterTest, FewerRowsThanRanks) {
  const auto [dtype, op] = GetParam();
  check_reducescatter(dtype, op, world() - 1, 4, 1.0, 1.0, name("few"));
  check_reducescatter(dtype, op, 0, 4, 1.0, 1.0, name("none"));
}

TEST_P(ReducescatterTest, ScaleFactors) {
  const auto [dtype, op] = GetParam();
  if (!hvd::is_floating(dtype)) GTEST_SKIP() << "scale factors are tested on float dtypes";
  check_reducescatter(dtype, op, 2 * world() + 1, 3, 0.5, 2.0, name("scaled"));
  check_reducescatter(dtype, op, world(), 1, 4.0, 0.25, name("scaled2"));
}

std::vector<ReducescatterParam> reducescatter_params() {
  std::vector<ReducescatterParam> params;
  for (DataType dtype : all_dtypes()) {
    params.emplace_back(dtype, ReduceOp::kSum);
    if (dtype != DataType::kBool) params.emplace_back(dtype, ReduceOp::kAverage);
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, ReducescatterTest, testing::ValuesIn(reducescatter_params()),
                         [](const testing::TestParamInfo<ReducescatterParam>& info) {
                           return dtype_str(std::get<0>(info.param)) + "_" +
                                  hvd::reduce_op_name(std::get<1>(info.param));
                         });

TEST(ReducescatterMoreTest, LargeHalfPrecisionSum) {
  // Over Gloo's segment size; 16-bit shares where bytes cross a network.
  check_reducescatter(DataType::kFloat16, ReduceOp::kSum, 4 * world() + 1, 70000, 1.0, 1.0,
                      "rs.large.fp16");
  check_reducescatter(DataType::kBFloat16, ReduceOp::kAverage, 3, 50000, 0.5, 1.0, "rs.large.bf16");
  check_reducescatter(DataType::kFloat16, ReduceOp::kAverage, 2 * world(), 40000, 2.0, 0.25,
                      "rs.large.fp16.scaled");
}

TEST(ReducescatterMoreTest, BlockingForm) {
  const std::string name = "rs.blocking";
  std::vector<std::int32_t> values(2 * world(), my_rank() + 1);
  hvd::Tensor out = hvd::reducescatter(hvd::view(values), name, ReduceOp::kSum);
  ASSERT_EQ(out.shape(), std::vector<std::int64_t>{2});
  EXPECT_EQ(out.data_as<std::int32_t>()[0], world() * (world() + 1) / 2);
  EXPECT_EQ(out.data_as<std::int32_t>()[1], world() * (world() + 1) / 2);
}

}  // namespace
}  // namespace hvdtest
