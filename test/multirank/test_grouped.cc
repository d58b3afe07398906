// Grouped allreduce / allgather / reducescatter through the public API: a
// group's members are negotiated together and run in the same cycle, in
// member order, with results identical to the ungrouped collectives.
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

std::string member(const std::string& group, std::size_t i) {
  return group + "." + std::to_string(i);
}

void wait_all(std::vector<hvd::Work>& works, const std::string& what) {
  for (std::size_t i = 0; i < works.size(); ++i) {
    try {
      works[i].wait(kPatience());
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << " member " << i << " failed: " << e.what();
    }
  }
}

// Mixed shapes, one large enough to exceed the 4 KiB fusion threshold of the
// fusion4k run (the group still fuses as a whole).
std::vector<std::vector<std::int64_t>> mixed_shapes() {
  return {{3, 4}, {}, {0}, {17}, {2, 3, 5}, {1500}};
}

// ---- Grouped allreduce ------------------------------------------------------

using GroupedAllreduceParam = std::tuple<DataType, ReduceOp>;

class GroupedAllreduceTest : public testing::TestWithParam<GroupedAllreduceParam> {
 protected:
  std::string name(const std::string& what) const {
    const auto [dtype, op] = GetParam();
    return "grp.ar." + what + "." + dtype_str(dtype) + "." + hvd::reduce_op_name(op);
  }

  // In place (out_of_place false) or into separate outputs.
  void run(const std::string& group, bool out_of_place, double prescale, double postscale) {
    const auto [dtype, op] = GetParam();
    const Pattern p = pattern_for(op, dtype);
    std::vector<Buffer> inputs, outputs;
    for (const auto& shape : mixed_shapes()) {
      inputs.emplace_back(dtype, shape);
      inputs.back().fill(p, salt_of(member(group, inputs.size() - 1)), my_rank());
      outputs.emplace_back(dtype, shape);
      outputs.back().poison();
    }
    const std::vector<Buffer> originals = inputs;
    std::vector<hvd::TensorView> in_views, out_views;
    for (auto& b : inputs) in_views.push_back(b.view());
    for (auto& b : outputs) out_views.push_back(b.view());
    std::vector<hvd::Work> works =
        out_of_place
            ? hvd::grouped_allreduce_async(in_views, out_views, group, op, prescale, postscale)
            : hvd::grouped_allreduce_async(in_views, group, op, prescale, postscale);
    ASSERT_EQ(works.size(), inputs.size());
    wait_all(works, group);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Buffer& result = out_of_place ? outputs[i] : inputs[i];
      check_allreduce(result, op, p, salt_of(member(group, i)), world(), prescale, postscale,
                      member(group, i));
      if (out_of_place) {
        check_same_bytes(inputs[i].data(), originals[i], member(group, i) + " (input unchanged)");
      }
    }
  }
};

TEST_P(GroupedAllreduceTest, InPlaceMixedShapes) { run(name("inplace"), false, 1.0, 1.0); }

TEST_P(GroupedAllreduceTest, OutOfPlaceMixedShapes) { run(name("outofplace"), true, 1.0, 1.0); }

TEST_P(GroupedAllreduceTest, ScaleFactors) {
  const auto [dtype, op] = GetParam();
  if (!hvd::is_floating(dtype) || op == ReduceOp::kMax) {
    GTEST_SKIP() << "scale factors are tested on float Sum/Average";
  }
  run(name("scaled"), false, 0.5, 2.0);
}

std::vector<GroupedAllreduceParam> grouped_allreduce_params() {
  std::vector<GroupedAllreduceParam> params;
  for (DataType dtype :
       {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
        DataType::kInt32, DataType::kInt64, DataType::kUInt8, DataType::kBool}) {
    params.emplace_back(dtype, ReduceOp::kSum);
    params.emplace_back(dtype, ReduceOp::kMax);
    if (dtype != DataType::kBool) params.emplace_back(dtype, ReduceOp::kAverage);
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(SomeDtypes, GroupedAllreduceTest,
                         testing::ValuesIn(grouped_allreduce_params()),
                         [](const testing::TestParamInfo<GroupedAllreduceParam>& info) {
                           return dtype_str(std::get<0>(info.param)) + "_" +
                                  hvd::reduce_op_name(std::get<1>(info.param));
                         });

TEST(GroupedAllreduceMoreTest, MixedDtypesInOneGroup) {
  std::vector<float> a(10, static_cast<float>(my_rank() + 1));
  std::vector<double> b(3, 2.0 * (my_rank() + 1));
  std::vector<std::int32_t> c(7, my_rank() + 1);
  hvd::grouped_allreduce({hvd::view(a), hvd::view(b), hvd::view(c)}, "grp.mixed", ReduceOp::kSum);
  const int total = world() * (world() + 1) / 2;
  for (float v : a) EXPECT_EQ(v, static_cast<float>(total));
  for (double v : b) EXPECT_EQ(v, 2.0 * total);
  for (std::int32_t v : c) EXPECT_EQ(v, total);
}

TEST(GroupedAllreduceMoreTest, AutomaticNamesAndEmptyGroup) {
  for (int round = 0; round < 3; ++round) {
    std::vector<std::int64_t> a(5, my_rank()), b(2, 1);
    hvd::grouped_allreduce({hvd::view(a), hvd::view(b)}, "", ReduceOp::kSum);
    for (auto v : a) EXPECT_EQ(v, world() * (world() - 1) / 2);
    for (auto v : b) EXPECT_EQ(v, world());
  }
  EXPECT_TRUE(hvd::grouped_allreduce_async({}, "grp.empty").empty());
}

TEST(GroupedAllreduceMoreTest, OutputCountMustMatch) {
  std::vector<float> a(4, 1.0f);
  EXPECT_THROW(hvd::grouped_allreduce_async({hvd::view(a)}, {}, "grp.badcount"),
               hvd::InvalidArgument);
}

// Every rank submits the same groups and single tensors, but in a
// rank-dependent order: negotiation agrees on one order anyway.
TEST(GroupedAllreduceMoreTest, GroupsSubmittedInDifferentOrders) {
  const int n = 4;
  std::vector<std::vector<std::int32_t>> ga(n), gb(n), singles(n);
  for (int i = 0; i < n; ++i) {
    ga[i].assign(3 + i, my_rank() + i);
    gb[i].assign(1 + 2 * i, 10 * (my_rank() + 1));
    singles[i].assign(5, my_rank() * i);
  }
  auto views = [](std::vector<std::vector<std::int32_t>>& tensors) {
    std::vector<hvd::TensorView> out;
    for (auto& t : tensors) out.push_back(hvd::view(t));
    return out;
  };
  std::vector<hvd::Work> works;
  auto submit_a = [&] {
    for (auto& w : hvd::grouped_allreduce_async(views(ga), "grp.order.a", ReduceOp::kSum))
      works.push_back(w);
  };
  auto submit_b = [&] {
    for (auto& w : hvd::grouped_allreduce_async(views(gb), "grp.order.b", ReduceOp::kSum))
      works.push_back(w);
  };
  auto submit_single = [&](int i) {
    works.push_back(hvd::allreduce_async(hvd::view(singles[i]), "grp.order.s" + std::to_string(i),
                                         ReduceOp::kSum));
  };
  if (my_rank() % 2 == 0) {
    submit_a();
    submit_single(0);
    submit_single(1);
    submit_b();
    submit_single(2);
    submit_single(3);
  } else {
    submit_single(3);
    submit_b();
    submit_single(2);
    submit_single(1);
    submit_a();
    submit_single(0);
  }
  wait_all(works, "grp.order");
  const int ranks_sum = world() * (world() - 1) / 2;
  for (int i = 0; i < n; ++i) {
    for (auto v : ga[i]) EXPECT_EQ(v, ranks_sum + world() * i) << "a." << i;
    for (auto v : gb[i]) EXPECT_EQ(v, 10 * (ranks_sum + world())) << "b." << i;
    for (auto v : singles[i]) EXPECT_EQ(v, ranks_sum * i) << "s" << i;
  }
}

// ---- Grouped allgather ------------------------------------------------------

TEST(GroupedAllgatherTest, RaggedFirstDimensions) {
  const std::string group = "grp.ag";
  const std::vector<DataType> dtypes = {DataType::kFloat32, DataType::kInt64, DataType::kFloat16,
                                        DataType::kUInt8};
  const int size = world(), rank = my_rank();
  // Member i of rank r has (r + i) % 3 rows of i + 1 columns.
  auto rows_of = [](int r, std::size_t i) { return static_cast<std::int64_t>((r + i) % 3); };
  std::vector<Buffer> inputs;
  std::vector<hvd::TensorView> views;
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    inputs.emplace_back(
        dtypes[i], std::vector<std::int64_t>{rows_of(rank, i), static_cast<std::int64_t>(i + 1)});
    inputs.back().fill(Pattern::kBits, salt_of(member(group, i)), rank);
  }
  for (auto& b : inputs) views.push_back(b.view());
  std::vector<hvd::Tensor> outputs = hvd::grouped_allgather(views, group);
  ASSERT_EQ(outputs.size(), inputs.size());
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    const std::int64_t cols = static_cast<std::int64_t>(i + 1);
    std::int64_t total_rows = 0;
    for (int r = 0; r < size; ++r) total_rows += rows_of(r, i);
    Buffer expected(dtypes[i], std::vector<std::int64_t>{total_rows, cols});
    hvd::visit_dtype(dtypes[i], [&](auto zero) {
      using T = decltype(zero);
      Store<T>* want = expected.as<Store<T>>();
      std::int64_t k = 0;
      for (int r = 0; r < size; ++r) {
        for (std::int64_t e = 0; e < rows_of(r, i) * cols; ++e) {
          want[k++] = input_value<T>(Pattern::kBits, salt_of(member(group, i)), r, e);
        }
      }
    });
    EXPECT_EQ(outputs[i].dtype(), dtypes[i]);
    ASSERT_EQ(outputs[i].shape(), expected.shape()) << member(group, i);
    check_same_bytes(outputs[i].data(), expected, member(group, i));
  }
}

// ---- Grouped reducescatter --------------------------------------------------

TEST(GroupedReducescatterTest, SeveralShapesAndDtypes) {
  const std::string group = "grp.rs";
  const int size = world(), rank = my_rank();
  const std::vector<std::tuple<DataType, ReduceOp, std::int64_t, std::int64_t>> members = {
      {DataType::kFloat32, ReduceOp::kSum, 2 * size + 1, 3},
      {DataType::kInt32, ReduceOp::kSum, size, 1},
      {DataType::kFloat64, ReduceOp::kSum, size - 1, 4},
      {DataType::kBFloat16, ReduceOp::kSum, 3 * size, 2},
  };
  std::vector<Buffer> inputs;
  std::vector<hvd::TensorView> views;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto& [dtype, op, rows, cols] = members[i];
    inputs.emplace_back(dtype, std::vector<std::int64_t>{rows, cols});
    inputs.back().fill(pattern_for(op, dtype), salt_of(member(group, i)), rank);
  }
  for (auto& b : inputs) views.push_back(b.view());
  std::vector<hvd::Tensor> outputs = hvd::grouped_reducescatter(views, group, ReduceOp::kSum);
  ASSERT_EQ(outputs.size(), members.size());
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto& [dtype, op, rows, cols] = members[i];
    const Pattern p = pattern_for(op, dtype);
    const std::vector<std::int64_t> out_shape = {share_rows(rows, size, rank), cols};
    const Buffer expected =
        reference_buffer(dtype, out_shape, op, p, salt_of(member(group, i)), size, 1.0, 1.0,
                         share_first_row(rows, size, rank) * cols);
    ASSERT_EQ(outputs[i].shape(), out_shape) << member(group, i);
    Buffer got(dtype, out_shape);
    if (got.size_bytes() > 0) std::memcpy(got.data(), outputs[i].data(), got.size_bytes());
    check_values(got, expected, member(group, i));
  }
}

TEST(GroupedReducescatterTest, AverageAsync) {
  std::vector<float> a(2 * world(), static_cast<float>(my_rank()));
  std::vector<float> b(world(), 4.0f);
  auto works = hvd::grouped_reducescatter_async({hvd::view(a), hvd::view(b)}, "grp.rs.avg");
  ASSERT_EQ(works.size(), 2u);
  wait_all(works, "grp.rs.avg");
  const float mean = (world() - 1) / 2.0f;
  ASSERT_EQ(works[0].output().shape(), std::vector<std::int64_t>{2});
  EXPECT_EQ(works[0].output().data_as<float>()[0], mean);
  EXPECT_EQ(works[0].output().data_as<float>()[1], mean);
  ASSERT_EQ(works[1].output().shape(), std::vector<std::int64_t>{1});
  EXPECT_EQ(works[1].output().data_as<float>()[0], 4.0f);
}

}  // namespace
}  // namespace hvdtest
