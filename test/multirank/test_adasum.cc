// Allreduce with ReduceOp::kAdasum through the public API: tensors alone,
// fused (grouped, and submitted together), with scale factors and on a
// process set, for every floating dtype, against the Adasum recursion in
// double arithmetic computed from every rank's inputs; the same bits on
// every rank. A rank count that is not a power of two (as in Horovod) and
// non-floating tensors fail on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../harness/adasum_reference.h"
#include "horovodcpp/horovodcpp.h"
#include "test_helpers.h"

namespace hvdtest {
namespace {

using hvd::Work;

const DataType kFloatDtypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                 DataType::kFloat64};

bool power_of_two(int n) { return (n & (n - 1)) == 0; }

// Rank r's value i of tensor `salt`, in double: a direction shared by every
// rank plus the rank's own noise, so that Adasum's coefficients are far
// from 1 (independent random vectors are nearly orthogonal: Adasum would
// be their sum). A scale per tensor tells per-tensor coefficients from
// coefficients over a whole fused buffer.
double raw_value(std::uint64_t salt, int rank, std::int64_t i) {
  auto unit = [](std::uint64_t h) { return static_cast<double>(h >> 11) * 0x1p-53 * 2 - 1; };
  const double scale = std::ldexp(1.0, static_cast<int>(salt % 5) - 2);  // 1/4 .. 4
  return scale *
         (unit(element_hash(salt, -1, i)) + 0.5 * (rank + 1) * unit(element_hash(salt, rank, i)));
}

// The value as stored in `dtype` (rounded once).
double stored_value(DataType dtype, std::uint64_t salt, int rank, std::int64_t i) {
  double v = raw_value(salt, rank, i);
  hvd::visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (is_float_v<T>) v = round_to<T>(v);
  });
  return v;
}

Buffer input_of(DataType dtype, std::int64_t count, std::uint64_t salt, int rank) {
  Buffer buffer(dtype, count);
  hvd::visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (is_float_v<T>) {
      for (std::int64_t i = 0; i < count; ++i) {
        buffer.as<Store<T>>()[i] = from_double<T>(stored_value(dtype, salt, rank, i));
      }
    }
  });
  return buffer;
}

// Largest error allowed, relative to the tensor's largest magnitude: the
// result is rounded once to 16-bit types (reduced in float32), float32
// rounds at every level.
double tolerance(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16: return 2e-3;
    case DataType::kBFloat16: return 1.6e-2;
    case DataType::kFloat32: return 1e-5;
    default: return 1e-12;
  }
}

// Checks `out`, the Adasum over `ranks` of their inputs of tensor `salt`
// (prescaled, then postscaled), and that every member of `set` got the
// same bytes.
void check_adasum(const Buffer& out, std::uint64_t salt, const std::vector<int>& ranks,
                  double prescale, double postscale, const std::string& what,
                  const hvd::ProcessSet& set = hvd::global_process_set()) {
  const std::int64_t n = out.num_elements();
  std::vector<std::vector<double>> inputs;
  for (int r : ranks) {
    std::vector<double> v(n);
    for (std::int64_t i = 0; i < n; ++i) v[i] = stored_value(out.dtype(), salt, r, i) * prescale;
    inputs.push_back(std::move(v));
  }
  std::vector<double> want = adasum_reference::adasum(inputs, 0, inputs.size());
  double magnitude = 0;
  for (double& x : want) {
    x *= postscale;
    magnitude = std::max(magnitude, std::fabs(x));
  }
  int wrong = 0;
  hvd::visit_dtype(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (is_float_v<T>) {
      for (std::int64_t i = 0; i < n; ++i) {
        const double have = to_double<T>(out.as<Store<T>>()[i]);
        if (std::fabs(have - want[i]) <= tolerance(out.dtype()) * magnitude) continue;
        if (wrong++ < 5) {
          ADD_FAILURE() << what << " [" << i << "]: got " << have << ", expected " << want[i];
        }
      }
    }
  });
  EXPECT_EQ(wrong, 0) << what << ": " << wrong << " of " << n << " elements off";

  // The same bytes on every member.
  Buffer bytes(DataType::kUInt8, static_cast<std::int64_t>(out.size_bytes()));
  if (out.size_bytes() > 0) std::memcpy(bytes.data(), out.data(), out.size_bytes());
  const hvd::Tensor all = hvd::allgather(bytes.view(), what + ".bytes", set);
  for (std::size_t m = 0; m < ranks.size(); ++m) {
    EXPECT_EQ(std::memcmp(all.data_as<std::uint8_t>() + m * out.size_bytes(), out.data(),
                          out.size_bytes()),
              0)
        << what << ": member " << m << " got other bits";
  }
}

std::vector<int> every_rank() {
  std::vector<int> ranks(hvd::size());
  for (int r = 0; r < hvd::size(); ++r) ranks[r] = r;
  return ranks;
}

// Sizes: fewer elements than ranks, odd, several fusion-buffer chunks.
const std::int64_t kCounts[] = {1, 3, 1000, 37, 4099};

std::string name_of(const std::string& test, DataType dtype, std::size_t t) {
  return "adasum." + test + "." + hvd::dtype_name(dtype) + "." + std::to_string(t);
}

// Runs `submit` (one Work per tensor); on a rank count that is not a power
// of two expects the InvalidArgument on every rank, else checks each
// output against the reference.
template <typename Submit>
void run_and_check(const std::string& test, DataType dtype, double prescale, double postscale,
                   Submit&& submit) {
  std::vector<Buffer> inputs, outputs;
  for (std::size_t t = 0; t < std::size(kCounts); ++t) {
    inputs.push_back(input_of(dtype, kCounts[t], salt_of(name_of(test, dtype, t)), hvd::rank()));
    outputs.emplace_back(dtype, kCounts[t]);
    outputs.back().poison();
  }
  std::vector<Work> works = submit(inputs, outputs);
  for (std::size_t t = 0; t < works.size(); ++t) {
    const std::string what = name_of(test, dtype, t);
    std::exception_ptr error = error_of([&] { return works[t]; });
    if (!power_of_two(hvd::size())) {
      expect_error<hvd::InvalidArgument>(
          error, {"Adasum", "power-of-two", "has " + std::to_string(hvd::size())}, {}, what);
      continue;
    }
    ASSERT_FALSE(error) << what << ": " << error_message(error);
    check_adasum(outputs[t], salt_of(what), every_rank(), prescale, postscale, what);
  }
}

TEST(AdasumTest, EachTensorAlone) {
  for (DataType dtype : kFloatDtypes) {
    run_and_check("alone", dtype, 1.0, 1.0, [&](std::vector<Buffer>& in, std::vector<Buffer>& out) {
      std::vector<Work> works;
      for (std::size_t t = 0; t < in.size(); ++t) {
        works.push_back(hvd::allreduce_async(in[t].view(), out[t].view(),
                                             name_of("alone", dtype, t), ReduceOp::kAdasum));
        error_of([&] { return works.back(); });  // done before the next: never fused
      }
      return works;
    });
  }
}

TEST(AdasumTest, GroupedTensorsFused) {
  for (DataType dtype : kFloatDtypes) {
    run_and_check("grouped", dtype, 1.0, 1.0,
                  [&](std::vector<Buffer>& in, std::vector<Buffer>& out) {
                    std::vector<hvd::TensorView> inputs, outputs;
                    for (std::size_t t = 0; t < in.size(); ++t) {
                      inputs.push_back(in[t].view());
                      outputs.push_back(out[t].view());
                    }
                    // Members are named "<name>.<t>", as name_of() names them.
                    return hvd::grouped_allreduce_async(
                        inputs, outputs, "adasum.grouped." + std::string(hvd::dtype_name(dtype)),
                        ReduceOp::kAdasum);
                  });
  }
}

// Submitted together with Sum allreduces of the same dtype: the cycle fuses
// the Adasum tensors (as far as the fusion threshold allows), never with
// the Sums.
TEST(AdasumTest, SubmittedTogetherWithSums) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16}) {
    std::vector<Buffer> sums;
    std::vector<Work> sum_works;
    run_and_check(
        "together", dtype, 1.0, 1.0, [&](std::vector<Buffer>& in, std::vector<Buffer>& out) {
          std::vector<Work> works;
          for (std::size_t t = 0; t < in.size(); ++t) {
            works.push_back(hvd::allreduce_async(in[t].view(), out[t].view(),
                                                 name_of("together", dtype, t), ReduceOp::kAdasum));
            sums.push_back(input_of(dtype, kCounts[t], t, hvd::rank()));
            sum_works.push_back(hvd::allreduce_async(
                sums.back().view(), name_of("together.sum", dtype, t), ReduceOp::kSum));
          }
          return works;
        });
    for (std::size_t t = 0; t < sums.size(); ++t) {
      ASSERT_TRUE(error_of([&] { return sum_works[t]; }) == nullptr);
      // The Sum of the same kind of values, in double, rounded once.
      hvd::visit_dtype(dtype, [&](auto zero) {
        using T = decltype(zero);
        if constexpr (is_float_v<T>) {
          for (std::int64_t i = 0; i < kCounts[t]; ++i) {
            double sum = 0;
            for (int r = 0; r < hvd::size(); ++r) sum += stored_value(dtype, t, r, i);
            ASSERT_NEAR(to_double<T>(sums[t].as<Store<T>>()[i]), round_to<T>(sum),
                        std::fabs(sum) * tolerance(dtype) + 1e-6)
                << "sum " << t << " [" << i << "]";
          }
        }
      });
    }
  }
}

TEST(AdasumTest, ScaleFactors) {
  for (DataType dtype : kFloatDtypes) {
    run_and_check("scaled", dtype, 0.5, 3.0,
                  [&](std::vector<Buffer>& in, std::vector<Buffer>& out) {
                    std::vector<Work> works;
                    for (std::size_t t = 0; t < in.size(); ++t) {
                      works.push_back(hvd::allreduce_async(in[t].view(), out[t].view(),
                                                           name_of("scaled", dtype, t),
                                                           ReduceOp::kAdasum, 0.5, 3.0));
                    }
                    return works;
                  });
  }
}

TEST(AdasumTest, InPlace) {
  Buffer tensor = input_of(DataType::kFloat32, 777, salt_of("adasum.inplace"), hvd::rank());
  std::exception_ptr error = error_of(
      [&] { return hvd::allreduce_async(tensor.view(), "adasum.inplace", ReduceOp::kAdasum); });
  if (!power_of_two(hvd::size())) {
    expect_error<hvd::InvalidArgument>(error, {"power-of-two"}, {}, "adasum.inplace");
    return;
  }
  ASSERT_FALSE(error) << error_message(error);
  check_adasum(tensor, salt_of("adasum.inplace"), every_rank(), 1.0, 1.0, "adasum.inplace");
}

TEST(AdasumTest, NonFloatingTensorsRejectedOnEveryRank) {
  for (DataType dtype : {DataType::kInt32, DataType::kUInt8, DataType::kInt64, DataType::kBool}) {
    Buffer tensor(dtype, 4);
    tensor.poison(0);
    const std::string name = std::string("adasum.int.") + hvd::dtype_name(dtype);
    expect_error<hvd::InvalidArgument>(
        error_of([&] { return hvd::allreduce_async(tensor.view(), name, ReduceOp::kAdasum); }),
        {"Adasum needs a floating-point tensor", hvd::dtype_name(dtype)}, {}, name);
  }
}

// Each set runs Adasum over its own members: sets of a power-of-two size
// match the reference over them, the others fail on every member.
TEST(AdasumTest, OnProcessSets) {
  std::vector<std::vector<int>> layouts;
  for (int n = 1; n < hvd::size(); ++n) {
    std::vector<int> ranks;
    for (int r = hvd::size() - n; r < hvd::size(); ++r) ranks.push_back(r);  // the last n
    layouts.push_back(ranks);
  }
  std::vector<hvd::ProcessSet> sets;
  for (const auto& ranks : layouts) sets.push_back(hvd::add_process_set(ranks));
  for (const hvd::ProcessSet& set : sets) {
    if (!set.included()) continue;
    const std::string name = "adasum.set" + std::to_string(set.id());
    Buffer tensor = input_of(DataType::kFloat64, 100, salt_of(name), hvd::rank());
    std::exception_ptr error = error_of([&] {
      return hvd::allreduce_async(tensor.view(), name, ReduceOp::kAdasum, 1.0, 1.0, set);
    });
    if (power_of_two(set.size())) {
      ASSERT_FALSE(error) << name << ": " << error_message(error);
      check_adasum(tensor, salt_of(name), set.ranks(), 1.0, 1.0, name, set);
    } else {
      expect_error<hvd::InvalidArgument>(
          error, {"power-of-two", "has " + std::to_string(set.size())}, {}, name);
    }
  }
  for (auto it = sets.rbegin(); it != sets.rend(); ++it) hvd::remove_process_set(*it);
}

}  // namespace
}  // namespace hvdtest
