// Error paths of negotiation through the public API.
//
// Suites:
//   Mismatch*   ranks disagree about a tensor (need >= 2 ranks; excluded on 1)
//   MultiRank*  need >= 2 ranks for another reason (excluded on 1 rank too)
//   others      run on any number of ranks
//   ZReinit     shutdown() / init() again; declared last so that it runs last
//
// Every rank runs the same sequence of collectives whatever its checks find,
// and waits with a bounded patience, so that a library bug shows up as a
// failed check on every rank instead of a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "horovodcpp/horovodcpp.h"
#include "test_helpers.h"

namespace hvdtest {
namespace {

using hvd::Device;
using hvd::TensorView;
using hvd::Work;

int my_rank() { return hvd::rank(); }
int world() { return hvd::size(); }

// One allreduce that must succeed: the runtime still works. Every rank calls
// it the same number of times, so the generated names agree.
void expect_healthy(const std::string& after) {
  static int counter = 0;
  const std::string name = "healthy." + std::to_string(counter++);
  std::vector<std::int32_t> t = {my_rank() + 1, 2, -3};
  auto error = error_of([&] { return hvd::allreduce_async(hvd::view(t), name, ReduceOp::kSum); });
  EXPECT_FALSE(error) << "allreduce after " << after << " failed: " << error_message(error);
  if (!error) {
    EXPECT_EQ(t[0], world() * (world() + 1) / 2) << "after " << after;
    EXPECT_EQ(t[1], 2 * world()) << "after " << after;
    EXPECT_EQ(t[2], -3 * world()) << "after " << after;
  }
}

// ---- Mismatch: ranks disagree (>= 2 ranks) ----------------------------------
// Rank 0 passes value A, every other rank value B (unless noted). Every
// rank's Work::wait() throws hvd::Mismatch naming the tensor, the field, both
// values and ranks that passed them.

TEST(MismatchTest, Dtype) {
  const std::string name = "mm.dtype";
  const DataType mine = my_rank() == 0 ? DataType::kFloat32 : DataType::kInt32;
  Buffer t(mine, 4);
  auto error = error_of([&] { return hvd::allreduce_async(t.view(), name, ReduceOp::kSum); });
  expect_error<hvd::Mismatch>(
      error,
      {name, "dtype", hvd::dtype_name(DataType::kFloat32), hvd::dtype_name(DataType::kInt32)},
      {0, 1}, name);
  expect_healthy(name);
}

TEST(MismatchTest, Shape) {
  const std::string name = "mm.shape";
  Buffer t(DataType::kFloat32, my_rank() == 0 ? 4 : 5);
  auto error = error_of([&] { return hvd::allreduce_async(t.view(), name, ReduceOp::kSum); });
  expect_error<hvd::Mismatch>(error, {name, "shape", hvd::shape_str({4}), hvd::shape_str({5})},
                              {0, 1}, name);
  expect_healthy(name);
}

TEST(MismatchTest, ShapeWithSameNumberOfElements) {
  const std::string name = "mm.shape.samenumel";
  const std::vector<std::int64_t> a = {2, 3}, b = {3, 2};
  Buffer t(DataType::kFloat64, my_rank() == 0 ? a : b);
  auto error = error_of([&] { return hvd::allreduce_async(t.view(), name, ReduceOp::kSum); });
  expect_error<hvd::Mismatch>(error, {name, "shape", hvd::shape_str(a), hvd::shape_str(b)}, {0, 1},
                              name);
  expect_healthy(name);
}

// Every rank passes a different shape.
TEST(MismatchTest, ShapeDiffersOnEveryRank) {
  const std::string name = "mm.shape.every";
  Buffer t(DataType::kInt32, my_rank() + 1);
  auto error = error_of([&] { return hvd::allreduce_async(t.view(), name, ReduceOp::kSum); });
  expect_error<hvd::Mismatch>(error, {name, "shape", hvd::shape_str({1}), hvd::shape_str({2})},
                              {0, 1}, name);
  expect_healthy(name);
}

TEST(MismatchTest, ReduceOp) {
  const std::string name = "mm.op";
  Buffer t(DataType::kFloat32, 3);
  const ReduceOp op = my_rank() == 0 ? ReduceOp::kSum : ReduceOp::kMax;
  auto error = error_of([&] { return hvd::allreduce_async(t.view(), name, op); });
  expect_error<hvd::Mismatch>(
      error, {name, "op", hvd::reduce_op_name(ReduceOp::kSum), hvd::reduce_op_name(ReduceOp::kMax)},
      {0, 1}, name);
  expect_healthy(name);
}

TEST(MismatchTest, BroadcastRoot) {
  const std::string name = "mm.root";
  Buffer t(DataType::kInt64, 6);
  const int root = my_rank() == 0 ? 0 : 1;
  auto error = error_of([&] { return hvd::broadcast_async(t.view(), root, name); });
  expect_error<hvd::Mismatch>(error, {name, "root"}, {0, 1}, name);
  expect_healthy(name);
}

TEST(MismatchTest, Prescale) {
  const std::string name = "mm.prescale";
  Buffer t(DataType::kFloat32, 3);
  const double pre = my_rank() == 0 ? 0.25 : 0.75;
  auto error =
      error_of([&] { return hvd::allreduce_async(t.view(), name, ReduceOp::kSum, pre, 1.0); });
  expect_error<hvd::Mismatch>(error, {name, "prescale", "0.25", "0.75"}, {0, 1}, name);
  expect_healthy(name);
}

TEST(MismatchTest, Postscale) {
  const std::string name = "mm.postscale";
  Buffer t(DataType::kFloat64, 3);
  const double post = my_rank() == 0 ? 0.25 : 0.75;
  auto error =
      error_of([&] { return hvd::allreduce_async(t.view(), name, ReduceOp::kAverage, 1.0, post); });
  expect_error<hvd::Mismatch>(error, {name, "postscale", "0.25", "0.75"}, {0, 1}, name);
  expect_healthy(name);
}

// Rank 1 claims its (host) memory is on cuda:0, the others on the CPU.
// Nothing is dereferenced: the mismatch is found in negotiation.
TEST(MismatchTest, Device) {
  const std::string name = "mm.device";
  Buffer t(DataType::kFloat32, 8);
  const Device device = my_rank() == 1 ? Device::cuda(0) : Device::cpu();
  auto error = error_of([&] { return hvd::allreduce_async(t.view(device), name, ReduceOp::kSum); });
  expect_error<hvd::Mismatch>(error, {name, "device", Device::cpu().str(), Device::cuda(0).str()},
                              {0, 1}, name);
  expect_healthy(name);
}

// Rank 0 allreduces, the others allgather, under one name.
TEST(MismatchTest, OperationAllreduceVsAllgather) {
  const std::string name = "mm.optype";
  Buffer t(DataType::kFloat32, 4);
  auto error = error_of([&] {
    return my_rank() == 0 ? hvd::allreduce_async(t.view(), name, ReduceOp::kSum)
                          : hvd::allgather_async(t.view(), name);
  });
  expect_error<hvd::Mismatch>(error, {name, "allreduce", "allgather"}, {0, 1}, name);
  expect_healthy(name);
}

// Rank 0 broadcasts, the others allreduce, under one name.
TEST(MismatchTest, OperationBroadcastVsAllreduce) {
  const std::string name = "mm.optype.bcast";
  Buffer t(DataType::kInt32, 4);
  auto error = error_of([&] {
    return my_rank() == 0 ? hvd::broadcast_async(t.view(), 0, name)
                          : hvd::allreduce_async(t.view(), name, ReduceOp::kSum);
  });
  expect_error<hvd::Mismatch>(error, {name, "broadcast", "allreduce"}, {0, 1}, name);
  expect_healthy(name);
}

// Allgather: the first dimension may differ, the others may not.
TEST(MismatchTest, AllgatherTrailingDimensions) {
  const std::string name = "mm.allgather.dims";
  const std::vector<std::int64_t> a = {2, 3}, b = {2, 4};
  Buffer t(DataType::kFloat32, my_rank() == 0 ? a : b);
  auto error = error_of([&] { return hvd::allgather_async(t.view(), name); });
  expect_error<hvd::Mismatch>(error, {name, "shape", hvd::shape_str(a), hvd::shape_str(b)}, {0, 1},
                              name);
  expect_healthy(name);
}

// A different number of dimensions is a mismatch even when the first differs
// legitimately.
TEST(MismatchTest, AllgatherRank) {
  const std::string name = "mm.allgather.ndim";
  const std::vector<std::int64_t> a = {3, 2}, b = {2};
  Buffer t(DataType::kInt16, my_rank() == 0 ? a : b);
  auto error = error_of([&] { return hvd::allgather_async(t.view(), name); });
  expect_error<hvd::Mismatch>(error, {name, "shape", hvd::shape_str(a), hvd::shape_str(b)}, {0, 1},
                              name);
  expect_healthy(name);
}

TEST(MismatchTest, AllgatherDtype) {
  const std::string name = "mm.allgather.dtype";
  Buffer t(my_rank() == 0 ? DataType::kFloat32 : DataType::kFloat64, 5);
  auto error = error_of([&] { return hvd::allgather_async(t.view(), name); });
  expect_error<hvd::Mismatch>(
      error,
      {name, "dtype", hvd::dtype_name(DataType::kFloat32), hvd::dtype_name(DataType::kFloat64)},
      {0, 1}, name);
  expect_healthy(name);
}

TEST(MismatchTest, BroadcastDtype) {
  const std::string name = "mm.broadcast.dtype";
  Buffer t(my_rank() == 0 ? DataType::kUInt8 : DataType::kInt8, 5);
  auto error = error_of([&] { return hvd::broadcast_async(t.view(), 0, name); });
  expect_error<hvd::Mismatch>(
      error, {name, "dtype", hvd::dtype_name(DataType::kUInt8), hvd::dtype_name(DataType::kInt8)},
      {0, 1}, name);
  expect_healthy(name);
}

// Only the mismatched tensor fails; the tensors in flight with it complete.
TEST(MismatchTest, OnlyTheMismatchedTensorFails) {
  const int size = world();
  std::vector<float> good1(100, 1.0f), good2(7, 2.0f);
  Buffer bad(my_rank() == 0 ? DataType::kFloat32 : DataType::kFloat16, 100);
  Work w1 = hvd::allreduce_async(hvd::view(good1), "mm.mixed.good1", ReduceOp::kSum);
  Work wbad = hvd::allreduce_async(bad.view(), "mm.mixed.bad", ReduceOp::kSum);
  Work w2 = hvd::allreduce_async(hvd::view(good2), "mm.mixed.good2", ReduceOp::kSum);
  auto error = error_of([&] { return wbad; });
  expect_error<hvd::Mismatch>(error, {"mm.mixed.bad", "dtype"}, {0, 1}, "mm.mixed.bad");
  auto e1 = error_of([&] { return w1; });
  auto e2 = error_of([&] { return w2; });
  EXPECT_FALSE(e1) << error_message(e1);
  EXPECT_FALSE(e2) << error_message(e2);
  if (!e1) {
    EXPECT_EQ(good1[99], static_cast<float>(size));
  }
  if (!e2) {
    EXPECT_EQ(good2[6], static_cast<float>(2 * size));
  }
  expect_healthy("mm.mixed");
}

// The name of a mismatched tensor is usable again afterwards.
TEST(MismatchTest, NameReusableAfterMismatch) {
  const std::string name = "mm.reuse";
  Buffer bad(DataType::kFloat32, my_rank() == 0 ? 2 : 3);
  auto error = error_of([&] { return hvd::allreduce_async(bad.view(), name, ReduceOp::kSum); });
  expect_error<hvd::Mismatch>(error, {name}, {}, name);
  std::vector<std::int32_t> t(3, 1);
  auto again = error_of([&] { return hvd::allreduce_async(hvd::view(t), name, ReduceOp::kSum); });
  EXPECT_FALSE(again) << error_message(again);
  if (!again) {
    EXPECT_EQ(t[2], world());
  }
}

// A grouped allreduce whose member 1 has another shape on ranks other than
// 0: every member of the group fails on every rank, with the same message.
TEST(MismatchTest, GroupedMemberShapeFailsTheWholeGroup) {
  const std::string group = "mm.group";
  std::vector<float> a(6, 1.0f), c(2, 3.0f);
  Buffer b(DataType::kFloat32, my_rank() == 0 ? 4 : 5);
  std::vector<Work> works =
      hvd::grouped_allreduce_async({hvd::view(a), b.view(), hvd::view(c)}, group, ReduceOp::kSum);
  ASSERT_EQ(works.size(), 3u);
  std::string first_message;
  for (std::size_t i = 0; i < works.size(); ++i) {
    auto error = error_of([&] { return works[i]; });
    expect_error<hvd::Mismatch>(error, {group, "mm.group.1", "shape"}, {0, 1},
                                group + "." + std::to_string(i));
    if (i == 0) first_message = error_message(error);
    EXPECT_EQ(error_message(error), first_message) << "member " << i;
  }
  // Nothing of the group ran.
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(c[1], 3.0f);
  expect_healthy(group);
}

// Alltoall: dtype and the dimensions after the first must agree; each
// rank's splits must add up to its first dimension.
TEST(MismatchTest, AlltoallDtype) {
  const std::string name = "mm.alltoall.dtype";
  Buffer t(my_rank() == 0 ? DataType::kFloat32 : DataType::kInt32, 2 * world());
  auto error = error_of([&] { return hvd::alltoall_async(t.view(), {}, name); });
  expect_error<hvd::Mismatch>(error,
                              {name, "alltoall", "dtype", hvd::dtype_name(DataType::kFloat32),
                               hvd::dtype_name(DataType::kInt32)},
                              {0, 1}, name);
  expect_healthy(name);
}

TEST(MismatchTest, AlltoallTrailingDimensions) {
  const std::string name = "mm.alltoall.dims";
  const std::vector<std::int64_t> a = {world(), 3}, b = {world(), 4};
  Buffer t(DataType::kFloat32, my_rank() == 0 ? a : b);
  auto error = error_of([&] { return hvd::alltoall_async(t.view(), {}, name); });
  expect_error<hvd::Mismatch>(error, {name, "shape", hvd::shape_str(a), hvd::shape_str(b)}, {0, 1},
                              name);
  expect_healthy(name);
}

// The last rank's splits add up to one row more than it has.
TEST(MismatchTest, AlltoallSplitsSumOnOneRank) {
  const std::string name = "mm.alltoall.splits";
  const int bad = world() - 1;
  Buffer t(DataType::kInt64, {world(), 2});
  std::vector<std::int64_t> splits(world(), 1);
  if (my_rank() == bad) splits[0] = 2;
  auto error = error_of([&] { return hvd::alltoall_async(t.view(), splits, name); });
  expect_error<hvd::InvalidArgument>(error, {name, "sum to"}, {bad}, name);
  expect_healthy(name);
}

TEST(MismatchTest, ReducescatterShape) {
  const std::string name = "mm.reducescatter.shape";
  Buffer t(DataType::kFloat32, my_rank() == 0 ? 4 : 5);
  auto error = error_of([&] { return hvd::reducescatter_async(t.view(), name, ReduceOp::kSum); });
  expect_error<hvd::Mismatch>(
      error, {name, "reducescatter", "shape", hvd::shape_str({4}), hvd::shape_str({5})}, {0, 1},
      name);
  expect_healthy(name);
}

// Max on the last rank only (the others pass Sum): InvalidArgument, not a
// mismatch, on every rank.
TEST(MismatchTest, ReducescatterMaxOnOneRank) {
  const std::string name = "mm.reducescatter.max";
  const int bad = world() - 1;
  Buffer t(DataType::kFloat32, 4);
  auto error = error_of([&] {
    return hvd::reducescatter_async(t.view(), name,
                                    my_rank() == bad ? ReduceOp::kMax : ReduceOp::kSum);
  });
  expect_error<hvd::InvalidArgument>(error, {name, "Sum or Average", "Max"}, {bad}, name);
  expect_healthy(name);
}

// ---- Invalid calls (any number of ranks) ------------------------------------

// Alltoall and reducescatter arguments every rank gets wrong alike.
TEST(InvalidArgs, AlltoallAndReducescatter) {
  {
    const std::string name = "bad.alltoall.indivisible";
    Buffer t(DataType::kFloat32, 2 * world() + 1);
    auto error = error_of([&] { return hvd::alltoall_async(t.view(), {}, name); });
    if (world() == 1) {
      EXPECT_FALSE(error) << error_message(error);
    } else {
      expect_error<hvd::InvalidArgument>(error, {name, "not divisible"}, {}, name);
    }
  }
  {
    const std::string name = "bad.alltoall.negative";
    Buffer t(DataType::kFloat32, 1);
    std::vector<std::int64_t> splits(world(), 0);
    splits[0] = -1;
    auto error = error_of([&] { return hvd::alltoall_async(t.view(), splits, name); });
    expect_error<hvd::InvalidArgument>(error, {name, "negative split"}, {my_rank()}, name);
  }
  {
    const std::string name = "bad.alltoall.count";
    Buffer t(DataType::kFloat32, 1);
    auto error = error_of([&] {
      return hvd::alltoall_async(t.view(), std::vector<std::int64_t>(world() + 1, 0), name);
    });
    expect_error<hvd::InvalidArgument>(error, {name, "entries"}, {}, name);
  }
  {
    const std::string name = "bad.alltoall.null";
    TensorView t(nullptr, DataType::kFloat32, {world()});
    auto error = error_of([&] { return hvd::alltoall_async(t, {}, name); });
    expect_error<hvd::InvalidArgument>(error, {name, "null"}, {}, name);
  }
  {
    const std::string name = "bad.alltoall.scalar";
    float x = 1;
    auto error = error_of([&] { return hvd::alltoall_async(hvd::view(&x, {}), {}, name); });
    expect_error<hvd::InvalidArgument>(error, {name, "dimension"}, {}, name);
  }
  {
    const std::string name = "bad.reducescatter.min";
    Buffer t(DataType::kInt32, 4);
    auto error = error_of([&] { return hvd::reducescatter_async(t.view(), name, ReduceOp::kMin); });
    expect_error<hvd::InvalidArgument>(error, {name, "Sum or Average"}, {}, name);
  }
  {
    const std::string name = "bad.reducescatter.bool.average";
    Buffer t(DataType::kBool, 4);
    auto error = error_of([&] { return hvd::reducescatter_async(t.view(), name); });
    expect_error<hvd::InvalidArgument>(error, {name, "bool"}, {}, name);
  }
  {
    const std::string name = "bad.reducescatter.null";
    TensorView t(nullptr, DataType::kFloat32, {3});
    auto error = error_of([&] { return hvd::reducescatter_async(t, name); });
    expect_error<hvd::InvalidArgument>(error, {name, "null"}, {}, name);
  }
  expect_healthy("bad alltoall/reducescatter");
}

// Submitting a name that is still in flight on this rank is an
// InvalidArgument at submission; the first operation still completes. Needs
// a second rank to hold the first in flight: on one rank it may complete at
// any moment (TensorQueueTest covers the rule itself deterministically).
TEST(MultiRankDuplicateName, SecondSubmissionWhileInFlightThrows) {
  const std::string name = "dup.inflight";
  const int size = world();
  std::vector<float> first(16, static_cast<float>(my_rank() + 1));
  std::vector<float> second(16, 0.0f);
  // Submits the duplicate; true if it was rejected at submission. If it was
  // accepted (the first had completed already), waits for it.
  auto duplicate_rejected = [&]() -> bool {
    Work w2;
    try {
      w2 = hvd::allreduce_async(hvd::view(second), name, ReduceOp::kSum);
    } catch (const hvd::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos)
          << "the error does not name the tensor: " << e.what();
      return true;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "wrong error type for a duplicate name: " << e.what();
      return true;
    }
    auto error = error_of([&] { return w2; });
    EXPECT_FALSE(error) << "accepted second submission failed: " << error_message(error);
    return false;
  };
  // Deterministic: rank 0's first submission cannot complete until the
  // others submit it, which they only do after the "go" allreduce that rank
  // 0 issues after trying the duplicate.
  Work w1;
  std::vector<std::int32_t> go = {1};
  if (my_rank() == 0) {
    w1 = hvd::allreduce_async(hvd::view(first), name, ReduceOp::kSum);
    const bool rejected = duplicate_rejected();
    EXPECT_TRUE(rejected) << "a second submission of an in-flight name was accepted";
    hvd::allreduce(hvd::view(go), "dup.inflight.go", ReduceOp::kSum);
  } else {
    hvd::allreduce(hvd::view(go), "dup.inflight.go", ReduceOp::kSum);
    w1 = hvd::allreduce_async(hvd::view(first), name, ReduceOp::kSum);
  }
  auto error = error_of([&] { return w1; });
  EXPECT_FALSE(error) << "the first submission failed: " << error_message(error);
  if (!error) {
    EXPECT_EQ(first[0], static_cast<float>(size * (size + 1) / 2));
  }
  expect_healthy(name);
}

// A name is free again once its operation completed.
TEST(DuplicateName, ReuseAfterCompletionIsFine) {
  std::vector<std::int32_t> t(4);
  for (int i = 0; i < 5; ++i) {
    std::fill(t.begin(), t.end(), i);
    auto error = error_of(
        [&] { return hvd::allreduce_async(hvd::view(t), "dup.sequential", ReduceOp::kSum); });
    EXPECT_FALSE(error) << error_message(error);
    if (!error) {
      EXPECT_EQ(t[0], i * world());
    }
  }
}

// The last rank passes an out-of-place output of the wrong element count /
// dtype. Every rank's operation fails with InvalidArgument naming that rank.
TEST(InvalidOutput, WrongElementCountOnOneRank) {
  const std::string name = "bad.output.count";
  const int bad = world() - 1;
  Buffer in(DataType::kFloat32, 10);
  Buffer out(DataType::kFloat32, my_rank() == bad ? 11 : 10);
  auto error =
      error_of([&] { return hvd::allreduce_async(in.view(), out.view(), name, ReduceOp::kSum); });
  expect_error<hvd::InvalidArgument>(error, {name}, {bad}, name);
  expect_healthy(name);
}

TEST(InvalidOutput, WrongDtypeOnOneRank) {
  const std::string name = "bad.output.dtype";
  const int bad = world() - 1;
  Buffer in(DataType::kFloat32, 10);
  Buffer out(my_rank() == bad ? DataType::kFloat64 : DataType::kFloat32, 10);
  auto error =
      error_of([&] { return hvd::allreduce_async(in.view(), out.view(), name, ReduceOp::kSum); });
  expect_error<hvd::InvalidArgument>(error, {name}, {bad}, name);
  expect_healthy(name);
}

// Same number of elements in another shape is a valid output.
TEST(InvalidOutput, OtherShapeSameCountIsAccepted) {
  const std::string name = "ok.output.reshaped";
  std::vector<std::int32_t> in(6, my_rank() + 1), out(6, 0);
  auto error = error_of([&] {
    return hvd::allreduce_async(hvd::view(in.data(), {6}), hvd::view(out.data(), {2, 3}), name,
                                ReduceOp::kSum);
  });
  EXPECT_FALSE(error) << error_message(error);
  if (!error) {
    EXPECT_EQ(out[5], world() * (world() + 1) / 2);
  }
}

// Broadcast from a rank that does not exist: InvalidArgument on every rank
// (at submission or through Work: every rank passes the same root).
TEST(InvalidArgs, BroadcastRootOutOfRange) {
  for (int root : {world(), -1}) {
    const std::string name = "bad.root." + std::to_string(root + 1);
    Buffer t(DataType::kFloat32, 4);
    auto error = error_of([&] { return hvd::broadcast_async(t.view(), root, name); });
    expect_error<hvd::InvalidArgument>(error, {}, {}, name);
  }
  expect_healthy("bad.root");
}

TEST(InvalidArgs, EmptyWorkHandle) {
  Work w;
  EXPECT_FALSE(w.valid());
}

// ---- MultiRank: need >= 2 ranks, no disagreement -----------------------------

// A timed wait on an operation that cannot complete yet throws Timeout and
// leaves it in flight; it completes once the others submit.
TEST(MultiRankTimeout, WaitTimesOutThenCompletes) {
  const std::string name = "late";
  const int size = world();
  std::vector<std::int64_t> t(9, my_rank() + 1);
  std::vector<std::int32_t> go = {1};
  Work w;
  if (my_rank() == 0) {
    w = hvd::allreduce_async(hvd::view(t), name, ReduceOp::kSum);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(w.wait(std::chrono::milliseconds(200)), hvd::Timeout);
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_GE(waited, std::chrono::milliseconds(190));
    EXPECT_LT(waited, std::chrono::seconds(20));
    EXPECT_FALSE(w.poll());
    EXPECT_FALSE(w.error());
    // Waiting again times out again: still in flight.
    EXPECT_THROW(w.wait(std::chrono::milliseconds(10)), hvd::Timeout);
    hvd::allreduce(hvd::view(go), "late.go", ReduceOp::kSum);
  } else {
    hvd::allreduce(hvd::view(go), "late.go", ReduceOp::kSum);
    w = hvd::allreduce_async(hvd::view(t), name, ReduceOp::kSum);
  }
  auto error = error_of([&] { return w; });
  EXPECT_FALSE(error) << error_message(error);
  if (!error) {
    EXPECT_TRUE(w.poll());
    EXPECT_EQ(t[8], size * (size + 1) / 2);
  }
}

// shutdown() with an operation pending (submitted by rank 0 only): it fails
// with RankFailure; init() again works.
TEST(MultiRankShutdown, PendingOperationFailsOnShutdown) {
  const int rank = my_rank();  // rank() throws between shutdown() and init()
  std::vector<float> orphan(4, 1.0f);
  Work w;
  if (rank == 0) w = hvd::allreduce_async(hvd::view(orphan), "orphan.own", ReduceOp::kSum);
  hvd::barrier();  // rank 0 has submitted before anyone shuts down
  hvd::shutdown();
  if (rank == 0) {
    auto error = error_of([&] { return w; });
    expect_error<hvd::RankFailure>(error, {}, {}, "pending at shutdown");
  }
  hvd::init();
  expect_healthy("shutdown with a pending operation");
}

// The other ranks shut down while rank 0 waits for an operation only it
// submitted: rank 0's wait fails with RankFailure (a rank left), it does not
// hang.
TEST(MultiRankShutdown, PendingOperationFailsWhenAnotherRankShutsDown) {
  const int rank = my_rank();
  std::vector<float> orphan(4, 1.0f);
  Work w;
  if (rank == 0) w = hvd::allreduce_async(hvd::view(orphan), "orphan.peer", ReduceOp::kSum);
  hvd::barrier();
  if (rank != 0) {
    hvd::shutdown();
  } else {
    auto error = error_of([&] { return w; });
    expect_error<hvd::RankFailure>(error, {}, {}, "pending when the other ranks shut down");
    hvd::shutdown();
  }
  hvd::init();
  expect_healthy("another rank's shutdown");
}

// ---- ZReinit: runs last -------------------------------------------------------

template <typename Fn>
void expect_not_initialized_error(const char* what, Fn&& fn) {
  try {
    fn();
    ADD_FAILURE() << what << " before init() did not throw";
  } catch (const hvd::InvalidArgument&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " before init() threw the wrong type: " << e.what();
  }
}

TEST(ZReinit, CallsBeforeInitThrowAndInitAgainWorks) {
  const int rank = hvd::rank();
  const int size = hvd::size();
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    hvd::shutdown();
    EXPECT_FALSE(hvd::is_initialized());
    EXPECT_NO_THROW(hvd::shutdown());  // safe twice

    std::vector<float> t(4, 1.0f);
    expect_not_initialized_error("rank()", [] { hvd::rank(); });
    expect_not_initialized_error("size()", [] { hvd::size(); });
    expect_not_initialized_error("local_rank()", [] { hvd::local_rank(); });
    expect_not_initialized_error("allreduce()", [&] { hvd::allreduce(hvd::view(t), "pre.ar"); });
    expect_not_initialized_error("allreduce_async()",
                                 [&] { hvd::allreduce_async(hvd::view(t), "pre.ar.async"); });
    expect_not_initialized_error("allgather_async()",
                                 [&] { hvd::allgather_async(hvd::view(t), "pre.ag"); });
    expect_not_initialized_error("broadcast_async()",
                                 [&] { hvd::broadcast_async(hvd::view(t), 0, "pre.bc"); });
    expect_not_initialized_error("barrier()", [] { hvd::barrier(); });

    try {
      hvd::init();
    } catch (const std::exception& e) {
      FAIL() << "init() after shutdown() failed: " << e.what();
    }
    ASSERT_TRUE(hvd::is_initialized());
    EXPECT_EQ(hvd::rank(), rank);
    EXPECT_EQ(hvd::size(), size);

    // Names used before the restart work again (no stale negotiation state).
    std::vector<std::int32_t> a(5, rank + 1);
    auto error = error_of(
        [&] { return hvd::allreduce_async(hvd::view(a), "mm.mixed.good1", ReduceOp::kSum); });
    EXPECT_FALSE(error) << error_message(error);
    if (!error) {
      EXPECT_EQ(a[4], size * (size + 1) / 2);
    }
    std::vector<std::int32_t> mine(rank + 1, rank);
    hvd::Tensor all;
    auto gather_error = error_of([&] {
      Work w = hvd::allgather_async(hvd::view(mine), "reinit.gather");
      w.wait(kPatience());
      all = w.output();
      return w;
    });
    EXPECT_FALSE(gather_error) << error_message(gather_error);
    if (!gather_error) {
      EXPECT_EQ(all.num_elements(), size * (size + 1) / 2);
    }
    std::vector<double> b(3, rank == 0 ? 4.5 : 0.0);
    auto bcast_error = error_of([&] { return hvd::broadcast_async(hvd::view(b), 0, "reinit.bc"); });
    EXPECT_FALSE(bcast_error) << error_message(bcast_error);
    if (!bcast_error) {
      EXPECT_EQ(b[2], 4.5);
    }
    expect_healthy("re-init");
  }
}

}  // namespace
}  // namespace hvdtest
