// Collectives through the public API, on every rank count: allreduce of
// every dtype x op x element count against a scalar reference, allgather with
// ragged first dimensions, broadcast from every root, barrier, out-of-order
// submission, many tensors in flight. Every rank runs the same collectives in
// the same way whatever happens, so that one rank's failed check never
// leaves the others waiting.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "horovodcpp/horovodcpp.h"
#include "test_helpers.h"

namespace hvdtest {
namespace {

using hvd::Device;
using hvd::Work;

std::string dtype_str(DataType dtype) { return hvd::dtype_name(dtype); }
std::string op_str(ReduceOp op) { return hvd::reduce_op_name(op); }

// Waits for `work`; reports an error as a failure of `what`. Returns success.
bool wait_ok(const Work& work, const std::string& what) {
  try {
    work.wait(kPatience());
    return true;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
    return false;
  }
}

// ---- Topology --------------------------------------------------------------

int env_int_or(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

// The launcher's word for a place: hvdrun's Gloo mode sets HOROVODCPP_X
// (or a Horovod script HOROVOD_X); Open MPI's mpirun sets OMPI_COMM_WORLD_Y.
int launcher_int_or(const char* hvd_name, const char* ompi_name, int fallback) {
  for (const char* prefix : {"HOROVODCPP_", "HOROVOD_"}) {
    const std::string name = std::string(prefix) + hvd_name;
    if (std::getenv(name.c_str())) return env_int_or(name.c_str(), fallback);
  }
  return env_int_or(ompi_name, fallback);
}

TEST(Topology, RankSizeLocalCross) {
  ASSERT_TRUE(hvd::is_initialized());
  const int rank = hvd::rank();
  const int size = hvd::size();
  EXPECT_GE(rank, 0);
  EXPECT_LT(rank, size);
  // The launcher (hvdrun or Open MPI's mpirun) tells every process its place.
  EXPECT_EQ(size, launcher_int_or("SIZE", "OMPI_COMM_WORLD_SIZE", size));
  EXPECT_EQ(rank, launcher_int_or("RANK", "OMPI_COMM_WORLD_RANK", rank));
  EXPECT_EQ(hvd::local_rank(),
            launcher_int_or("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", hvd::local_rank()));
  EXPECT_EQ(hvd::local_size(),
            launcher_int_or("LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", hvd::local_size()));
  // The suites run on one host, except where the ctest entry says how the
  // ranks spread over hosts (checked in test_backend_name.cc).
  if (std::getenv("HOROVODCPP_TEST_EXPECT_LOCAL_SIZES") != nullptr) return;
  EXPECT_EQ(hvd::local_size(), size);
  EXPECT_EQ(hvd::local_rank(), rank);
  EXPECT_EQ(hvd::cross_size(), 1);
  EXPECT_EQ(hvd::cross_rank(), 0);
  EXPECT_TRUE(hvd::is_homogeneous());
}

TEST(Topology, Transports) {
  const std::vector<std::string> built = hvd::built_transports();
  ASSERT_FALSE(built.empty());
  // hvdrun --gloo sets HOROVODCPP_CPU_OPERATIONS=gloo; else the first built.
  const char* chosen = std::getenv("HOROVODCPP_CPU_OPERATIONS");
  EXPECT_EQ(hvd::transport(), chosen ? std::string(chosen) : built.front());
  EXPECT_NE(std::find(built.begin(), built.end(), hvd::transport()), built.end());
}

// ---- Allreduce: every dtype x op x mode for one element count -------------

enum class Mode {
  kInPlace,           // allreduce_async(tensor)
  kOutOfPlace,        // allreduce_async(input, output)
  kAliased,           // allreduce_async(t, t): output aliases input
  kScaledOutOfPlace,  // prescale 0.5, postscale 4 (floats)
  kScaledInPlace,     // prescale 2, postscale 0.25 (floats)
};

const char* mode_str(Mode mode) {
  switch (mode) {
    case Mode::kInPlace: return "inplace";
    case Mode::kOutOfPlace: return "outofplace";
    case Mode::kAliased: return "aliased";
    case Mode::kScaledOutOfPlace: return "scaled_oop";
    case Mode::kScaledInPlace: return "scaled_inplace";
  }
  return "?";
}

struct AllreduceCase {
  DataType dtype;
  ReduceOp op;
  Mode mode;
  std::string name;
  std::uint64_t salt = 0;
  Pattern pattern = Pattern::kSmall;
  double prescale = 1.0;
  double postscale = 1.0;
  Buffer input;
  Buffer original;  // copy of the input of out-of-place modes
  Buffer output;    // empty for in-place modes
  Work work;
  bool submitted = false;
};

std::vector<std::unique_ptr<AllreduceCase>> allreduce_cases(std::int64_t count) {
  std::vector<std::unique_ptr<AllreduceCase>> cases;
  for (DataType dtype : all_dtypes()) {
    for (ReduceOp op : all_ops()) {
      if (dtype == DataType::kBool && op == ReduceOp::kAverage) continue;  // rejected
      std::vector<Mode> modes = {Mode::kInPlace, Mode::kOutOfPlace};
      // Aliasing and scale factors do not depend on the element count: the
      // largest count (slow to check) runs the two basic modes only.
      const bool all_modes = count <= 1000;
      if (all_modes && op == ReduceOp::kSum) modes.push_back(Mode::kAliased);
      if (all_modes && hvd::is_floating(dtype)) {
        modes.push_back(Mode::kScaledOutOfPlace);
        modes.push_back(Mode::kScaledInPlace);
      }
      for (Mode mode : modes) {
        auto c = std::make_unique<AllreduceCase>();
        c->dtype = dtype;
        c->op = op;
        c->mode = mode;
        c->name = "ar." + std::to_string(count) + "." + dtype_str(dtype) + "." + op_str(op) + "." +
                  mode_str(mode);
        // The modes of one dtype/op share their input values (and so, with
        // equal factors, their reference).
        c->salt =
            salt_of("ar." + std::to_string(count) + "." + dtype_str(dtype) + "." + op_str(op));
        c->pattern = pattern_for(op, dtype);
        if (mode == Mode::kScaledOutOfPlace) {
          c->prescale = 0.5;
          c->postscale = 4.0;
        } else if (mode == Mode::kScaledInPlace) {
          c->prescale = 2.0;
          c->postscale = 0.25;
        }
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

void submit(AllreduceCase& c, std::int64_t count) {
  c.input = Buffer(c.dtype, count);
  c.input.fill(c.pattern, c.salt, hvd::rank());
  const bool out_of_place = c.mode == Mode::kOutOfPlace || c.mode == Mode::kScaledOutOfPlace;
  try {
    if (out_of_place) {
      c.output = Buffer(c.dtype, count);
      c.output.poison();
      c.original = c.input;
      c.work = hvd::allreduce_async(c.input.view(), c.output.view(), c.name, c.op, c.prescale,
                                    c.postscale);
    } else if (c.mode == Mode::kAliased) {
      c.work = hvd::allreduce_async(c.input.view(), c.input.view(), c.name, c.op);
    } else {
      c.work = hvd::allreduce_async(c.input.view(), c.name, c.op, c.prescale, c.postscale);
    }
    c.submitted = true;
  } catch (const std::exception& e) {
    ADD_FAILURE() << c.name << ": submission threw: " << e.what();
  }
}

// The last reference computed: consecutive cases with the same dtype, op,
// values and factors reuse it.
struct ReferenceCache {
  std::string key;
  Buffer expected;
};

const Buffer& reference_of(const AllreduceCase& c, const Buffer& out, ReferenceCache& cache) {
  std::ostringstream key;
  key << static_cast<int>(c.dtype) << '/' << static_cast<int>(c.op) << '/' << c.salt << '/'
      << c.prescale << '/' << c.postscale << '/' << out.num_elements();
  if (cache.key != key.str()) {
    cache.key = key.str();
    cache.expected = reference_buffer(c.dtype, out.shape(), c.op, c.pattern, c.salt, hvd::size(),
                                      c.prescale, c.postscale);
  }
  return cache.expected;
}

void wait_and_check(AllreduceCase& c, ReferenceCache& cache) {
  if (!c.submitted || !wait_ok(c.work, c.name)) return;
  EXPECT_TRUE(c.work.poll()) << c.name;
  EXPECT_FALSE(c.work.error()) << c.name;
  const bool out_of_place = c.mode == Mode::kOutOfPlace || c.mode == Mode::kScaledOutOfPlace;
  const Buffer& result = out_of_place ? c.output : c.input;
  check_values(result, reference_of(c, result, cache), c.name);
  if (out_of_place) {
    // The input of an out-of-place allreduce is left alone.
    check_same_bytes(c.input.data(), c.original, c.name + " (input must be unchanged)");
  }
}

class AllreduceTest : public testing::TestWithParam<std::int64_t> {};

// Every dtype x op x mode, all submitted before any wait (batched by memory
// to bound each rank's footprint). 2^18+3 elements: above the default
// shared-memory slot (256 KiB) in every dtype, one byte included, so each
// streams through several chunks, the last one partial.
TEST_P(AllreduceTest, EveryDtypeOpAndMode) {
  const std::int64_t count = GetParam();
  auto cases = allreduce_cases(count);
  constexpr std::size_t kBatchBytes = std::size_t{192} << 20;
  std::size_t begin = 0;
  while (begin < cases.size()) {
    std::size_t end = begin;
    std::size_t bytes = 0;
    while (end < cases.size() && (end == begin || bytes < kBatchBytes)) {
      bytes += 3 * static_cast<std::size_t>(count) * hvd::dtype_size(cases[end]->dtype);
      ++end;
    }
    for (std::size_t i = begin; i < end; ++i) submit(*cases[i], count);
    ReferenceCache cache;
    for (std::size_t i = begin; i < end; ++i) {
      wait_and_check(*cases[i], cache);
      cases[i]->input = Buffer();
      cases[i]->original = Buffer();
      cases[i]->output = Buffer();
    }
    begin = end;
  }
}

INSTANTIATE_TEST_SUITE_P(Counts, AllreduceTest,
                         testing::Values(std::int64_t{0}, std::int64_t{1}, std::int64_t{7},
                                         std::int64_t{1000}, (std::int64_t{1} << 18) + 3),
                         [](const testing::TestParamInfo<std::int64_t>& info) {
                           return "n" + std::to_string(info.param);
                         });

// Every dtype x op x mode again, one blocking call at a time and three
// times each: the repeats are served from the response cache, and where the
// control plane carries data (shared memory, every rank on one host) a
// small one travels inline with the cycle's bit vector and each rank
// reduces it (CacheNegotiation). Each call gives the reference, and the
// repeats the first call's bits (negotiated, run by the backend).
TEST(Allreduce, LoneRepeatsGiveTheFirstCallsBits) {
  for (const std::int64_t count : {std::int64_t{1}, std::int64_t{7}, std::int64_t{300}}) {
    for (auto& c : allreduce_cases(count)) {
      const bool out_of_place = c->mode == Mode::kOutOfPlace || c->mode == Mode::kScaledOutOfPlace;
      Buffer first;
      for (int call = 0; call < 3; ++call) {
        ReferenceCache cache;
        submit(*c, count);
        wait_and_check(*c, cache);
        const Buffer& result = out_of_place ? c->output : c->input;
        if (call == 0) {
          first = result;
        } else {
          check_same_bytes(result.data(), first, c->name + " call " + std::to_string(call));
        }
      }
    }
  }
}

// A scalar (shape []) is a one-element tensor.
TEST(Allreduce, ScalarTensor) {
  for (DataType dtype : {DataType::kFloat32, DataType::kInt64, DataType::kFloat16}) {
    const std::string name = "ar.scalar." + dtype_str(dtype);
    Buffer t(dtype, std::vector<std::int64_t>{});
    ASSERT_EQ(t.num_elements(), 1);
    t.fill(Pattern::kSmall, salt_of(name), hvd::rank());
    Work w = hvd::allreduce_async(t.view(), name, ReduceOp::kSum);
    if (wait_ok(w, name)) {
      check_allreduce(t, ReduceOp::kSum, Pattern::kSmall, salt_of(name), hvd::size(), 1, 1, name);
    }
  }
}

// Multi-dimensional tensors reduce element-wise like flat ones.
TEST(Allreduce, MultiDimensional) {
  const std::string name = "ar.3d";
  Buffer t(DataType::kFloat64, std::vector<std::int64_t>{3, 4, 5});
  t.fill(Pattern::kSmall, salt_of(name), hvd::rank());
  Work w = hvd::allreduce_async(t.view(), name, ReduceOp::kAverage);
  if (wait_ok(w, name)) {
    check_allreduce(t, ReduceOp::kAverage, Pattern::kSmall, salt_of(name), hvd::size(), 1, 1, name);
  }
}

// The default op is Average and the blocking forms return the result.
TEST(Allreduce, BlockingAndDefaultAverage) {
  const int size = hvd::size();
  std::vector<float> t(33);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<float>(hvd::rank() + 1) * 2;
  hvd::allreduce(hvd::view(t), "ar.blocking.default");
  // mean over ranks of 2 * (r + 1) = size + 1
  for (float v : t) EXPECT_EQ(v, static_cast<float>(size + 1));

  std::vector<std::int32_t> in(5, hvd::rank() + 1), out(5, -1);
  hvd::allreduce(hvd::view(in), hvd::view(out), "ar.blocking.oop", ReduceOp::kSum);
  for (auto v : out) EXPECT_EQ(v, size * (size + 1) / 2);
  for (auto v : in) EXPECT_EQ(v, hvd::rank() + 1);
}

// Integer Average is Horovod's: the sum times 1 / size in double, truncated
// toward zero (negative sums too).
TEST(Allreduce, IntegerAverageTruncatesTheScaledSum) {
  const int size = hvd::size();
  const int rank = hvd::rank();
  std::vector<std::int32_t> t = {rank == 0 ? -1 : -2, rank == 0 ? 1 : 2, rank == 0 ? -7 : 0,
                                 rank == 0 ? 7 : 0};
  hvd::allreduce(hvd::view(t), "ar.int.avg.trunc", ReduceOp::kAverage);
  const std::int32_t s0 = -1 - 2 * (size - 1), s1 = 1 + 2 * (size - 1);
  const double inverse = 1.0 / size;
  EXPECT_EQ(t[0], static_cast<std::int32_t>(s0 * inverse));
  EXPECT_EQ(t[1], static_cast<std::int32_t>(s1 * inverse));
  EXPECT_EQ(t[2], static_cast<std::int32_t>(-7 * inverse));
  EXPECT_EQ(t[3], static_cast<std::int32_t>(7 * inverse));
}

// Integer scale factors as Horovod applies them: each rank's tensor scaled in
// double and truncated before the sum, the sum after it (Average: by
// postscale / size), for allreduce and reducescatter.
TEST(Allreduce, IntegerScaleFactorsApplyOnEachRankThenToTheSum) {
  const int size = hvd::size();
  const auto value = [](int r, int i) { return static_cast<std::int32_t>(3 * i - 5 + r); };
  const int n = 4 * size;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
    const std::string tag = std::string("ar.int.scaled.") + hvd::reduce_op_name(op);
    std::vector<std::int32_t> t(n), expected(n);
    for (int i = 0; i < n; ++i) {
      t[i] = value(hvd::rank(), i);
      std::int32_t sum = 0;
      for (int r = 0; r < size; ++r) sum += static_cast<std::int32_t>(value(r, i) * 0.7);
      expected[i] = static_cast<std::int32_t>(sum * (op == ReduceOp::kAverage ? 1.5 / size : 1.5));
    }
    std::vector<std::int32_t> u = t;  // the allreduce below overwrites t
    Work rs = hvd::reducescatter_async(hvd::view(u), tag + ".rs", op, 0.7, 1.5);
    hvd::allreduce(hvd::view(t), tag, op, 0.7, 1.5);
    EXPECT_EQ(t, expected) << tag;
    if (wait_ok(rs, tag + ".rs")) {
      const std::int32_t* got = rs.output().data_as<std::int32_t>();
      const int mine = n / size, first = hvd::rank() * mine;
      for (int i = 0; i < mine; ++i) EXPECT_EQ(got[i], expected[first + i]) << tag << " " << i;
    }
  }
}

// Floating Average is Horovod's: the sum, rounded to the dtype, times
// 1 / size (in float32 for float32 and the 16-bit types, see
// horovod_scaled).
TEST(Allreduce, FloatAverageScalesTheRoundedSum) {
  const int size = hvd::size();
  const int rank = hvd::rank();
  std::vector<float> f32 = {static_cast<float>(rank + 1), 1.0f / 1024};
  std::vector<double> f64 = {static_cast<double>(rank + 1), 0.1};
  std::vector<hvd::float16_t> f16 = {hvd::float16_t(static_cast<float>(rank + 1)),
                                     hvd::float16_t(1.0f)};
  std::vector<hvd::bfloat16_t> bf16 = {hvd::bfloat16_t(static_cast<float>(rank + 1)),
                                       hvd::bfloat16_t(1.0f)};
  // Rank 0's second element of the halves is 1 + one ulp (from the others: 1).
  if (rank == 0) {
    f16[1].bits += 1;
    bf16[1].bits += 1;
  }
  Work w1 = hvd::allreduce_async(hvd::view(f32), "ar.avg.f32");
  Work w2 = hvd::allreduce_async(hvd::view(f64), "ar.avg.f64");
  Work w3 = hvd::allreduce_async(hvd::view(f16), "ar.avg.f16");
  Work w4 = hvd::allreduce_async(hvd::view(bf16), "ar.avg.bf16");
  const double tri = size * (size + 1) / 2.0;
  if (wait_ok(w1, "ar.avg.f32")) {
    EXPECT_EQ(f32[0], horovod_scaled<float>(tri, 1.0 / size));
    EXPECT_EQ(f32[1], horovod_scaled<float>(size / 1024.0, 1.0 / size));
  }
  if (wait_ok(w2, "ar.avg.f64")) {
    EXPECT_EQ(f64[0], tri * (1.0 / size));
    EXPECT_NEAR(f64[1], 0.1, 1e-15);  // summation order is the library's: compare loosely
  }
  const double ulp16 = std::ldexp(1.0, -10), ulpbf = std::ldexp(1.0, -7);
  if (wait_ok(w3, "ar.avg.f16")) {
    using F16 = hvd::float16_t;
    EXPECT_EQ(static_cast<float>(f16[0]), horovod_scaled<F16>(tri, 1.0 / size));
    EXPECT_EQ(static_cast<float>(f16[1]),
              horovod_scaled<F16>(round_to<F16>(size + ulp16), 1.0 / size));
  }
  if (wait_ok(w4, "ar.avg.bf16")) {
    using BF16 = hvd::bfloat16_t;
    EXPECT_EQ(static_cast<float>(bf16[0]), horovod_scaled<BF16>(tri, 1.0 / size));
    EXPECT_EQ(static_cast<float>(bf16[1]),
              horovod_scaled<BF16>(round_to<BF16>(size + ulpbf), 1.0 / size));
  }
}

// Integer Sum and Product wrap around (two's complement), every int dtype.
TEST(Allreduce, IntegerWraparound) {
  struct Case {
    DataType dtype;
    ReduceOp op;
    std::string name;
    Buffer buf;
    Work work;
  };
  std::vector<Case> cases;
  for (DataType dtype : {DataType::kUInt8, DataType::kInt8, DataType::kUInt16, DataType::kInt16,
                         DataType::kInt32, DataType::kInt64}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct}) {
      Case c{dtype, op, "ar.wrap." + dtype_str(dtype) + "." + op_str(op), Buffer(dtype, 64), {}};
      // Full-range values: sums and products overflow (for size >= 2).
      c.buf.fill(Pattern::kFull, salt_of(c.name), hvd::rank());
      cases.push_back(std::move(c));
    }
  }
  for (auto& c : cases) c.work = hvd::allreduce_async(c.buf.view(), c.name, c.op);
  for (auto& c : cases) {
    if (wait_ok(c.work, c.name)) {
      check_allreduce(c.buf, c.op, Pattern::kFull, salt_of(c.name), hvd::size(), 1, 1, c.name);
    }
  }
  // And the classic one: 127 + 1 (+ 1 ...) in int8.
  std::vector<std::int8_t> t = {static_cast<std::int8_t>(hvd::rank() == 0 ? 127 : 1)};
  hvd::allreduce(hvd::view(t), "ar.wrap.int8.classic", ReduceOp::kSum);
  EXPECT_EQ(static_cast<int>(t[0]),
            static_cast<int>(static_cast<std::int8_t>(127 + (hvd::size() - 1))));
}

// bool Average is rejected (hvd::InvalidArgument) on every rank; the
// runtime keeps working afterwards.
TEST(Allreduce, BoolAverageIsRejected) {
  Buffer b(DataType::kBool, 8);
  b.fill(Pattern::kBits, 1, hvd::rank());
  auto error =
      error_of([&] { return hvd::allreduce_async(b.view(), "ar.bool.avg", ReduceOp::kAverage); });
  expect_error<hvd::InvalidArgument>(error, {}, {}, "bool Average");
  std::vector<std::int32_t> t = {1};
  hvd::allreduce(hvd::view(t), "ar.bool.avg.after", ReduceOp::kSum);
  EXPECT_EQ(t[0], hvd::size());
}

// Unnamed operations get consistent automatic names when every rank issues
// them in the same order.
TEST(Allreduce, UnnamedInSameOrder) {
  std::vector<Work> works;
  std::vector<std::vector<std::int64_t>> bufs(5);
  for (int k = 0; k < 5; ++k) {
    bufs[k].assign(3 + k, (hvd::rank() + 1) * (k + 1));
    works.push_back(hvd::allreduce_async(hvd::view(bufs[k]), "", ReduceOp::kSum));
  }
  const std::int64_t tri = hvd::size() * (hvd::size() + 1) / 2;
  for (int k = 0; k < 5; ++k) {
    if (!wait_ok(works[k], "unnamed " + std::to_string(k))) continue;
    for (auto v : bufs[k]) EXPECT_EQ(v, tri * (k + 1)) << "unnamed " << k;
  }
}

// The same names again and again (steady state: the response cache path),
// and a name is reusable once its operation completed.
TEST(Allreduce, SteadyStateIterations) {
  const int size = hvd::size();
  for (int iter = 0; iter < 30; ++iter) {
    std::vector<std::vector<float>> grads(8);
    std::vector<Work> works;
    for (int k = 0; k < 8; ++k) {
      grads[k].assign(16 + 100 * k, static_cast<float>(hvd::rank() + iter + k));
      works.push_back(hvd::allreduce_async(hvd::view(grads[k]), "steady.grad" + std::to_string(k),
                                           ReduceOp::kSum));
    }
    for (int k = 0; k < 8; ++k) {
      if (!wait_ok(works[k], "steady iteration " + std::to_string(iter))) continue;
      const float want = static_cast<float>(size * (size - 1) / 2 + size * (iter + k));
      for (float v : grads[k]) {
        if (v != want) {
          ADD_FAILURE() << "iteration " << iter << " tensor " << k << ": got " << v << ", expected "
                        << want;
          break;
        }
      }
    }
  }
}

// allreduce_async_many: one operation per tensor, each with its own name
// and result (fused as separate submissions would be); all queued or none.
// float16/bfloat16 of 64 KiB and more with scale factors and every op that
// sums: where bytes cross a network they go as 16-bit shares
// (half_shares.h), prescaled in 16 bits; alone and fused with a small one.
TEST(Allreduce, LargeHalfWithScaleFactors) {
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kProduct}) {
      std::vector<std::unique_ptr<AllreduceCase>> cases;
      for (std::int64_t count : {std::int64_t{40000}, std::int64_t{40000}, std::int64_t{5}}) {
        auto c = std::make_unique<AllreduceCase>();
        c->dtype = dtype;
        c->op = op;
        c->mode = cases.empty() ? Mode::kScaledOutOfPlace : Mode::kScaledInPlace;
        c->name = "ar.halfscaled." + dtype_str(dtype) + "." + op_str(op) + "." +
                  std::to_string(cases.size());
        c->salt = salt_of(c->name);
        c->pattern = pattern_for(op, dtype);
        c->prescale = cases.empty() ? 0.5 : 2.0;
        c->postscale = cases.empty() ? 4.0 : 0.25;
        submit(*c, count);
        cases.push_back(std::move(c));
      }
      ReferenceCache cache;
      for (auto& c : cases) wait_and_check(*c, cache);
    }
  }
}

TEST(Allreduce, ManyInOneCall) {
  const int size = hvd::size();
  std::vector<std::vector<float>> grads(3);
  std::vector<hvd::TensorView> views;
  for (int k = 0; k < 3; ++k) {
    grads[k].assign(10 + 7 * k, static_cast<float>(hvd::rank() + k));
    views.push_back(hvd::view(grads[k]));
  }
  std::vector<Work> works =
      hvd::allreduce_async_many(views, {"many.0", "many.1", "many.2"}, ReduceOp::kSum);
  ASSERT_EQ(works.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    if (!wait_ok(works[k], "many " + std::to_string(k))) continue;
    const float want = static_cast<float>(size * (size - 1) / 2 + size * k);
    for (float v : grads[k]) EXPECT_EQ(v, want) << "tensor " << k;
  }
  // A refused name refuses the whole call: nothing of it is queued. (A
  // name twice in the call, not one still in flight from an earlier call:
  // the coordinator may complete that one at any moment; TensorQueueTest
  // covers it.)
  std::vector<float> twice(4, 1.0f), other(4, 1.0f);
  EXPECT_THROW(
      hvd::allreduce_async_many({hvd::view(other), hvd::view(twice), hvd::view(twice)},
                                {"many.other", "many.twice", "many.twice"}, ReduceOp::kSum),
      hvd::InvalidArgument);
  // many.other was not queued: the name is free, and this is its only use.
  EXPECT_TRUE(
      wait_ok(hvd::allreduce_async(hvd::view(other), "many.other", ReduceOp::kSum), "many.other"));
  EXPECT_THROW(hvd::allreduce_async_many({hvd::view(other)}, {}), hvd::InvalidArgument);
}

// A fused group of 30 MB: on a transport's own backend (noshm, two hosts)
// it is reduced a chunk at a time (on Gloo two chunks at once, in its two
// allreduce lanes) while the copies in and out run beside it
// (fusion_pipeline.h); without a prescale the large tensors, in place, are
// reduced in their own memory (fused_layout.h; the 20 MB one in three
// chunks). All are scaled.
TEST(Allreduce, FusedGroupLargerThanTwoPipelineChunks) {
  const int rank = hvd::rank(), size = hvd::size();
  const std::vector<std::size_t> counts = {1500000, 5000000, 1000000, 3};
  for (const double prescale : {2.0, 1.0}) {
    std::vector<std::vector<float>> tensors(counts.size());
    std::vector<hvd::TensorView> views;
    std::vector<std::string> names;
    for (std::size_t t = 0; t < counts.size(); ++t) {
      tensors[t].resize(counts[t]);
      // Small integers: every sum is exact in float32.
      for (std::size_t i = 0; i < counts[t]; ++i) {
        tensors[t][i] = static_cast<float>((i + 3 * t) % 1000 + rank);
      }
      views.push_back(hvd::view(tensors[t]));
      names.push_back("pipelined." + std::to_string(prescale) + "." + std::to_string(t));
    }
    std::vector<Work> works =
        hvd::allreduce_async_many(views, names, ReduceOp::kSum, prescale, 0.5);
    for (std::size_t t = 0; t < counts.size(); ++t) {
      if (!wait_ok(works[t], names[t])) continue;
      std::size_t wrong = 0, first_wrong = 0;
      for (std::size_t i = 0; i < counts[t]; ++i) {
        const float sum = static_cast<float>(size * ((i + 3 * t) % 1000) + size * (size - 1) / 2);
        const float want = static_cast<float>(prescale * 0.5) * sum;
        if (tensors[t][i] != want && wrong++ == 0) first_wrong = i;
      }
      EXPECT_EQ(wrong, 0u) << names[t] << ": first wrong element " << first_wrong;
    }
  }
}

// ---- Allgather ------------------------------------------------------------

// Rows contributed by `rank` under row pattern `pattern`.
std::int64_t rows_of(int pattern, int rank, int size) {
  switch (pattern) {
    case 0: return (rank * 2 + 1) % 4;        // 1, 3, 1, 3
    case 1: return rank % 3;                  // rank 0 has none
    case 2: return rank == size - 1 ? 5 : 0;  // only the last rank
    case 3: return 0;                         // nobody: empty result
    case 4: return 300 + 37 * rank;           // larger
  }
  return 1;
}

struct GatherCase {
  DataType dtype;
  std::vector<std::int64_t> trailing;  // dimensions after the first
  bool scalar = false;                 // input shape []: gathered as [1] per rank
  int pattern = 0;
  std::string name;
  Buffer input;
  Work work;
  bool submitted = false;
};

// The rows of `rank` (what it passed) for a case, as a buffer.
Buffer gather_input(const GatherCase& c, int rank, int size) {
  std::vector<std::int64_t> shape;
  if (!c.scalar) {
    shape.push_back(rows_of(c.pattern, rank, size));
    shape.insert(shape.end(), c.trailing.begin(), c.trailing.end());
  }
  Buffer b(c.dtype, shape);
  b.fill(Pattern::kBits, salt_of(c.name), rank);
  return b;
}

void run_gather_cases(std::vector<std::unique_ptr<GatherCase>>& cases);

TEST(Allgather, RaggedFirstDimensionEveryDtype) {
  std::vector<std::unique_ptr<GatherCase>> cases;
  const std::vector<std::vector<std::int64_t>> trailings = {{}, {3}, {2, 4}};
  for (DataType dtype : all_dtypes()) {
    for (int pattern = 0; pattern < 5; ++pattern) {
      for (std::size_t t = 0; t < trailings.size(); ++t) {
        auto c = std::make_unique<GatherCase>();
        c->dtype = dtype;
        c->trailing = trailings[t];
        c->pattern = pattern;
        c->name = "ag." + dtype_str(dtype) + ".p" + std::to_string(pattern) + ".d" +
                  std::to_string(t + 1);
        cases.push_back(std::move(c));
      }
    }
  }
  run_gather_cases(cases);
}

// Scalars (shape []) are gathered as tensors of shape [1]: output [size].
TEST(Allgather, ScalarsEveryDtype) {
  std::vector<std::unique_ptr<GatherCase>> cases;
  for (DataType dtype : all_dtypes()) {
    auto c = std::make_unique<GatherCase>();
    c->dtype = dtype;
    c->scalar = true;
    c->name = "ag." + dtype_str(dtype) + ".scalar";
    cases.push_back(std::move(c));
  }
  run_gather_cases(cases);
}

void run_gather_cases(std::vector<std::unique_ptr<GatherCase>>& cases) {
  const int rank = hvd::rank();
  const int size = hvd::size();
  for (auto& c : cases) {
    c->input = gather_input(*c, rank, size);
    try {
      c->work = hvd::allgather_async(c->input.view(), c->name);
      c->submitted = true;
    } catch (const std::exception& e) {
      ADD_FAILURE() << c->name << ": submission threw: " << e.what();
    }
  }
  for (auto& c : cases) {
    if (!c->submitted || !wait_ok(c->work, c->name)) continue;
    const hvd::Tensor& out = c->work.output();
    // Expected: every rank's rows concatenated in rank order.
    std::vector<std::int64_t> shape;
    std::int64_t total_rows = 0;
    for (int r = 0; r < size; ++r) total_rows += c->scalar ? 1 : rows_of(c->pattern, r, size);
    shape.push_back(total_rows);
    shape.insert(shape.end(), c->trailing.begin(), c->trailing.end());
    EXPECT_EQ(out.dtype(), c->dtype) << c->name;
    EXPECT_EQ(out.shape(), shape) << c->name << ": output shape " << hvd::shape_str(out.shape());
    Buffer expected(c->dtype, shape);
    std::size_t offset = 0;
    for (int r = 0; r < size; ++r) {
      Buffer part = gather_input(*c, r, size);
      if (part.size_bytes()) {
        std::memcpy(static_cast<unsigned char*>(expected.data()) + offset, part.data(),
                    part.size_bytes());
      }
      offset += part.size_bytes();
    }
    if (out.shape() != shape || out.dtype() != c->dtype) continue;
    if (expected.size_bytes() > 0) {
      if (out.data() == nullptr) {
        ADD_FAILURE() << c->name << ": null output data";
        continue;
      }
      check_same_bytes(out.data(), expected, c->name);
    }
  }
}

TEST(Allgather, BlockingReturnsTensor) {
  std::vector<std::int32_t> mine(hvd::rank() + 1, hvd::rank());
  hvd::Tensor all = hvd::allgather(hvd::view(mine), "ag.blocking");
  const int size = hvd::size();
  ASSERT_EQ(all.shape(), (std::vector<std::int64_t>{size * (size + 1) / 2}));
  ASSERT_EQ(all.dtype(), DataType::kInt32);
  const std::int32_t* p = all.data_as<std::int32_t>();
  std::size_t k = 0;
  for (int r = 0; r < size; ++r) {
    for (int j = 0; j <= r; ++j, ++k) EXPECT_EQ(p[k], r) << "element " << k;
  }
}

// ---- Broadcast -------------------------------------------------------------

TEST(Broadcast, EveryRootEveryDtype) {
  const int rank = hvd::rank();
  const int size = hvd::size();
  const std::vector<std::vector<std::int64_t>> shapes = {
      {}, {0}, {1}, {7}, {1000}, {10, 10, 10}, {(std::int64_t{1} << 20) + 3}};
  for (int root = 0; root < size; ++root) {
    struct Case {
      std::string name;
      Buffer buf;
      Work work;
      bool submitted = false;
    };
    std::vector<Case> cases;
    for (DataType dtype : all_dtypes()) {
      for (std::size_t s = 0; s < shapes.size(); ++s) {
        Case c;
        c.name =
            "bc.root" + std::to_string(root) + "." + dtype_str(dtype) + ".s" + std::to_string(s);
        c.buf = Buffer(dtype, shapes[s]);
        c.buf.fill(Pattern::kBits, salt_of(c.name), rank);  // differs per rank
        cases.push_back(std::move(c));
      }
    }
    for (auto& c : cases) {
      try {
        c.work = hvd::broadcast_async(c.buf.view(), root, c.name);
        c.submitted = true;
      } catch (const std::exception& e) {
        ADD_FAILURE() << c.name << ": submission threw: " << e.what();
      }
    }
    for (auto& c : cases) {
      if (!c.submitted || !wait_ok(c.work, c.name)) continue;
      Buffer expected(c.buf.dtype(), c.buf.shape());
      expected.fill(Pattern::kBits, salt_of(c.name), root);
      check_same_bytes(c.buf.data(), expected, c.name);
    }
  }
}

TEST(Broadcast, Blocking) {
  std::vector<double> t(10, hvd::rank() == hvd::size() - 1 ? 2.5 : -1.0);
  hvd::broadcast(hvd::view(t), hvd::size() - 1, "bc.blocking");
  for (double v : t) EXPECT_EQ(v, 2.5);
}

// ---- Barrier ----------------------------------------------------------------

// Nobody leaves the barrier before the last rank entered it: rank r enters
// after r * 50 ms, and every exit time is >= every entry time (steady_clock is
// CLOCK_MONOTONIC, comparable between processes of one host).
TEST(Barrier, NobodyLeavesBeforeEveryoneArrived) {
  hvd::barrier();
  using Clock = std::chrono::steady_clock;
  std::this_thread::sleep_for(std::chrono::milliseconds(50 * hvd::rank()));
  const std::int64_t enter = Clock::now().time_since_epoch().count();
  hvd::barrier();
  const std::int64_t leave = Clock::now().time_since_epoch().count();
  std::vector<std::int64_t> mine = {enter, leave};
  hvd::Tensor all = hvd::allgather(hvd::view(mine.data(), {1, 2}), "barrier.times");
  ASSERT_EQ(all.shape(), (std::vector<std::int64_t>{hvd::size(), 2}));
  const std::int64_t* t = all.data_as<std::int64_t>();
  std::int64_t last_enter = 0;
  for (int r = 0; r < hvd::size(); ++r) last_enter = std::max(last_enter, t[2 * r]);
  for (int r = 0; r < hvd::size(); ++r) {
    EXPECT_GE(t[2 * r + 1], last_enter) << "rank " << r << " left the barrier early";
  }
}

TEST(Barrier, ManyInARow) {
  for (int i = 0; i < 50; ++i) hvd::barrier();
  std::vector<std::int32_t> t = {1};
  hvd::allreduce(hvd::view(t), "barrier.after", ReduceOp::kSum);
  EXPECT_EQ(t[0], hvd::size());
}

// ---- Ordering and concurrency -------------------------------------------

// Each rank submits the same 50 names (allreduce, allgather and broadcast
// mixed, several dtypes and sizes) in its own permutation.
TEST(Ordering, RankDependentSubmissionOrder) {
  const int rank = hvd::rank();
  const int size = hvd::size();
  constexpr int kNames = 50;
  struct Op {
    int kind;  // 0 allreduce, 1 allgather, 2 broadcast
    std::string name;
    Buffer buf;
    Work work;
  };
  std::vector<Op> ops(kNames);
  const DataType dtypes[] = {DataType::kFloat32, DataType::kInt32, DataType::kFloat64,
                             DataType::kUInt8, DataType::kFloat16};
  for (int k = 0; k < kNames; ++k) {
    Op& op = ops[k];
    op.kind = k % 3;
    op.name = "order." + std::to_string(k);
    const DataType dtype = dtypes[k % 5];
    const std::int64_t count = 1 + (k * 97) % 3000;
    op.buf = Buffer(dtype, op.kind == 1 ? count + rank : count);
    op.buf.fill(op.kind == 0 ? Pattern::kSmall : Pattern::kBits, salt_of(op.name), rank);
  }
  std::vector<int> order(kNames);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(1234u + 7919u * static_cast<unsigned>(rank));
  std::shuffle(order.begin(), order.end(), rng);
  if (rank == 1) std::reverse(order.begin(), order.end());
  for (int k : order) {
    Op& op = ops[k];
    if (op.kind == 0) {
      op.work = hvd::allreduce_async(op.buf.view(), op.name, ReduceOp::kSum);
    } else if (op.kind == 1) {
      op.work = hvd::allgather_async(op.buf.view(), op.name);
    } else {
      op.work = hvd::broadcast_async(op.buf.view(), k % size, op.name);
    }
  }
  // Wait in yet another order.
  for (int i = kNames - 1; i >= 0; --i) {
    Op& op = ops[i];
    if (!wait_ok(op.work, op.name)) continue;
    if (op.kind == 0) {
      check_allreduce(op.buf, ReduceOp::kSum, Pattern::kSmall, salt_of(op.name), size, 1, 1,
                      op.name);
    } else if (op.kind == 1) {
      const hvd::Tensor& out = op.work.output();
      std::int64_t total = 0;
      for (int r = 0; r < size; ++r) total += op.buf.num_elements() - rank + r;
      if (out.shape() != std::vector<std::int64_t>{total}) {
        ADD_FAILURE() << op.name << ": output shape " << hvd::shape_str(out.shape())
                      << ", expected [" << total << "]";
        continue;
      }
      std::size_t offset = 0;
      for (int r = 0; r < size; ++r) {
        Buffer part(op.buf.dtype(), op.buf.num_elements() - rank + r);
        part.fill(Pattern::kBits, salt_of(op.name), r);
        check_same_bytes(static_cast<const unsigned char*>(out.data()) + offset, part,
                         op.name + " rows of rank " + std::to_string(r));
        offset += part.size_bytes();
      }
    } else {
      Buffer expected(op.buf.dtype(), op.buf.shape());
      expected.fill(Pattern::kBits, salt_of(op.name), i % size);
      check_same_bytes(op.buf.data(), expected, op.name);
    }
  }
}

// 1000 small tensors in flight at once.
TEST(Ordering, ThousandSmallTensorsInFlight) {
  const int rank = hvd::rank();
  const int size = hvd::size();
  constexpr int kCount = 1000;
  const DataType dtypes[] = {DataType::kFloat32, DataType::kInt32, DataType::kFloat64,
                             DataType::kBFloat16, DataType::kInt64};
  std::vector<std::string> names(kCount);
  std::vector<Buffer> bufs(kCount);
  std::vector<Work> works(kCount);
  for (int k = 0; k < kCount; ++k) {
    names[k] = "many." + std::to_string(k);
    bufs[k] = Buffer(dtypes[k % 5], 1 + k % 17);
    bufs[k].fill(Pattern::kSmall, salt_of(names[k]), rank);
  }
  for (int k = 0; k < kCount; ++k) {
    works[k] = hvd::allreduce_async(bufs[k].view(), names[k], ReduceOp::kSum);
  }
  int failures = 0;
  for (int k = 0; k < kCount && failures < 5; ++k) {
    if (!wait_ok(works[k], names[k])) {
      ++failures;
      continue;
    }
    if (!check_allreduce(bufs[k], ReduceOp::kSum, Pattern::kSmall, salt_of(names[k]), size, 1, 1,
                         names[k])) {
      ++failures;
    }
  }
}

// Several user threads submit at once (as autograd hooks do).
TEST(Ordering, ConcurrentSubmittingThreads) {
  const int rank = hvd::rank();
  const int size = hvd::size();
  constexpr int kThreads = 4, kPerThread = 25;
  std::vector<Buffer> bufs(kThreads * kPerThread);
  std::vector<Work> works(kThreads * kPerThread);
  std::vector<std::string> names(kThreads * kPerThread);
  for (int i = 0; i < kThreads * kPerThread; ++i) {
    names[i] = "threads." + std::to_string(i);
    bufs[i] = Buffer(DataType::kFloat32, 1 + 13 * i);
    bufs[i].fill(Pattern::kSmall, salt_of(names[i]), rank);
  }
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int j = 0; j < kPerThread; ++j) {
          const int i = t * kPerThread + j;
          works[i] = hvd::allreduce_async(bufs[i].view(), names[i], ReduceOp::kSum);
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  for (int i = 0; i < kThreads * kPerThread; ++i) {
    if (!works[i].valid() || !wait_ok(works[i], names[i])) continue;
    check_allreduce(bufs[i], ReduceOp::kSum, Pattern::kSmall, salt_of(names[i]), size, 1, 1,
                    names[i]);
  }
}

}  // namespace
}  // namespace hvdtest
