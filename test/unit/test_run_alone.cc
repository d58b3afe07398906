// A lone blocking allreduce (or barrier) that its caller runs in a cycle of its own
// (Coordinator::run_alone), one rank over a control plane that carries the
// inline input: the first call is negotiated and queued like any
// submission; a repeat hits the response cache, goes inline and completes
// in its cycle without a queue entry, a Work or a backend collective. It
// does not run while anything else is in flight, its name is held against
// other submissions meanwhile (test_tensor_queue.cc), and an error of its
// cycle reaches its caller.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "coordinator_test_helpers.h"
#include "core/runtime/coordinator.h"
#include "counting_backend.h"
#include "horovodcpp/errors.h"
#include "horovodcpp/work.h"

namespace hvd {
namespace {

// One rank whose bit vector AND carries payloads, as the shared-memory
// plane does; it can be made to fail.
class CarryingSoloController : public Controller {
 public:
  const Topology& topology() const override { return topology_; }
  std::vector<std::string> gather_to_root(const std::string& message) override { return {message}; }
  std::string broadcast_from_root(const std::string& message) override { return message; }
  void bitwise_and(std::vector<std::uint64_t>&) override { check(); }
  std::size_t payload_capacity() const override { return 8 << 10; }
  void bitwise_and_gathering(std::vector<std::uint64_t>&, const std::string& payload,
                             std::vector<std::string>& gathered) override {
    check();
    gathered.assign(1, payload);
  }
  std::atomic<bool> fail{false};

 private:
  void check() {
    if (fail) throw RankFailure("rank 1 stopped answering (test)", {1});
  }
  Topology topology_;
};

class RunAloneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CoordinatorSettings settings;
    settings.cycle_time = std::chrono::hours(1);  // only waiting threads run cycles
    settings.fusion_threshold = 64 << 20;
    settings.cache_capacity = 1024;
    coordinator_ = std::make_unique<Coordinator>(controller_, backend_, queue_, settings);
    coordinator_->start();
  }
  void TearDown() override { coordinator_->stop(); }

  // An allreduce of `in` into `out` (views of 4 floats), prescaled by 3,
  // named and checked as ProcessSetRuntime::prepare leaves it.
  static AloneCall call(const TensorView& in, const TensorView& out) {
    Request r;
    r.op_type = OpType::kAllreduce;
    r.name = "loss";
    r.dtype = DataType::kFloat32;
    r.shape = in.shape;
    r.reduce_op = ReduceOp::kSum;
    r.prescale_factor = 3.0;
    return AloneCall(std::move(r), in, out);
  }
  static TensorView view(std::vector<float>& data) {
    return TensorView(data.data(), DataType::kFloat32, {static_cast<std::int64_t>(data.size())});
  }

  CarryingSoloController controller_;
  CountingBackend backend_;
  TensorQueue queue_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(RunAloneTest, ARepeatCompletesInItsCycleWithoutAnEntryOrACollective) {
  std::vector<float> in = {1, 2, 3, 4}, out(4, 0.0f);
  const TensorView in_view = view(in), out_view = view(out);
  AloneCall first = call(in_view, out_view);
  ASSERT_TRUE(coordinator_->run_alone(first));
  ASSERT_NE(first.work, nullptr);  // new name: negotiated, queued, run by the backend
  Work(first.work).wait(std::chrono::milliseconds(10000));
  EXPECT_EQ(backend_.allreduces.load(), 1);

  for (int repeat = 0; repeat < 3; ++repeat) {
    out.assign(4, 0.0f);
    AloneCall again = call(in_view, out_view);
    ASSERT_TRUE(coordinator_->run_alone(again));
    EXPECT_TRUE(again.done) << repeat;
    EXPECT_EQ(again.work, nullptr) << repeat;
    EXPECT_EQ(again.error, nullptr) << repeat;
    EXPECT_EQ(out, (std::vector<float>{3, 6, 9, 12})) << repeat;  // prescaled, one rank
    EXPECT_EQ(in, (std::vector<float>{1, 2, 3, 4})) << repeat;
  }
  EXPECT_EQ(backend_.allreduces.load(), 1);
}

TEST_F(RunAloneTest, ARepeatedBarrierCompletesInItsCycle) {
  const TensorView nothing(nullptr, DataType::kUInt8, {0});
  auto barrier = [&] {
    Request r;
    r.op_type = OpType::kBarrier;
    r.name = "barrier";
    return AloneCall(std::move(r), nothing, nothing);
  };
  AloneCall first = barrier();
  ASSERT_TRUE(coordinator_->run_alone(first));
  ASSERT_NE(first.work, nullptr);
  Work(first.work).wait(std::chrono::milliseconds(10000));
  AloneCall again = barrier();
  ASSERT_TRUE(coordinator_->run_alone(again));
  EXPECT_TRUE(again.done);
  EXPECT_EQ(again.work, nullptr);
}

TEST_F(RunAloneTest, NotRunWhileAnotherTensorIsInFlight) {
  std::vector<float> first = {1}, second = {2}, in = {1}, out = {0};
  const TensorView in_view = view(in), out_view = view(out);
  // One member of a group of two: no cycle releases it before the other
  // member comes, so it stays in flight whenever the coordinator runs.
  auto member = [&](int index, std::vector<float>& data) {
    TensorEntry entry = allreduce_entry(queue_, "group." + std::to_string(index), data);
    entry.request.group_id = "group";
    entry.request.group_size = 2;
    return entry;
  };
  TensorEntry entry = member(0, first);
  Work pending(entry.work);
  queue_.push(std::move(entry));
  AloneCall c = call(in_view, out_view);
  EXPECT_FALSE(coordinator_->run_alone(c));
  EXPECT_EQ(c.request.name, "loss");  // untouched: the caller submits it as usual
  TensorEntry rest = member(1, second);
  Work completing(rest.work);
  queue_.push(std::move(rest));
  EXPECT_NO_THROW(completing.wait(std::chrono::milliseconds(10000)));
  EXPECT_NO_THROW(pending.wait(std::chrono::milliseconds(10000)));
}

TEST_F(RunAloneTest, AnErrorOfItsCycleReachesTheCaller) {
  std::vector<float> in = {1}, out = {0};
  const TensorView in_view = view(in), out_view = view(out);
  AloneCall first = call(in_view, out_view);
  ASSERT_TRUE(coordinator_->run_alone(first));
  Work(first.work).wait(std::chrono::milliseconds(10000));
  controller_.fail = true;
  AloneCall failing = call(in_view, out_view);
  EXPECT_THROW(coordinator_->run_alone(failing), RankFailure);
  AloneCall after = call(in_view, out_view);
  EXPECT_FALSE(coordinator_->run_alone(after));  // ended: the queue refuses it with the error
}

}  // namespace
}  // namespace hvd
