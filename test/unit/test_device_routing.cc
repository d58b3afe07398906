// CollectiveExecutor's routing of CUDA tensors to DeviceOperations, with
// fakes (no GPU): fused allreduces reach the device as one group, broadcast
// goes there too, unsupported ops and builds without device operations fail
// the Work with a clear error, CPU tensors stay on the backend. Staged
// device operations (MPI/Gloo): every collective runs on the CPU backend
// over the staging's host copies, whose results go back to the outputs.
// join(): a joined rank's zeros group as the other ranks' tensors do and
// reach the device (dtype and shape only) or the CPU backend (host zeros,
// unstaged) like them. Staged
// collectives show the CPU backend's op on the timeline, as CPU tensors do.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "../harness/timeline_file.h"
#include "core/runtime/collective_executor.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

constexpr std::size_t kFusionThreshold = 64 << 20;  // room for every group below

// One cycle's responses, handed over by address as the coordinator does.
std::size_t execute_all(CollectiveExecutor& executor, const std::vector<Response>& responses,
                        TensorQueue& queue) {
  std::vector<const Response*> addresses;
  for (const Response& response : responses) addresses.push_back(&response);
  return executor.execute_all(addresses, queue);
}

class FakeBackend : public Backend {
 public:
  const char* name() const override { return "fake"; }
  BackendCapabilities capabilities() const override { return {}; }
  void allreduce(void*, std::size_t, DataType, ReduceOp) override { ++calls; }
  void allgatherv(const void*, void*, const std::vector<std::size_t>&, DataType) override {
    ++calls;
  }
  void broadcast(void*, std::size_t, DataType, int) override { ++calls; }
  void alltoallv(const void*, const std::vector<std::size_t>&, void*,
                 const std::vector<std::size_t>&, DataType) override {
    ++calls;
  }
  void reducescatter(void*, void*, const std::vector<std::size_t>&, DataType, ReduceOp) override {
    ++calls;
  }
  int calls = 0;
};

// Records what it is given and completes the Works at once.
class FakeDevice : public DeviceOperations {
 public:
  const char* name() const override { return "fake-gpu"; }
  std::shared_ptr<void> record_ready(const TensorView&) override { return nullptr; }
  void allreduce(const std::vector<const TensorEntry*>& group, int set_size) override {
    if (fail) throw BackendError("device refused");
    std::vector<std::string> names;
    for (const TensorEntry* e : group) {
      // A joined rank's zeros: dtype and shape, no host memory to go with them.
      const std::string zeros = e->input.data
                                    ? " (host zeros)"
                                    : " (zeros of " + std::to_string(e->input.num_elements()) + ")";
      names.push_back(e->request.name + (e->joined ? zeros : ""));
      e->work->complete();
    }
    allreduces.push_back(names);
    last_set_size = set_size;
  }
  void broadcast(const TensorEntry& entry) override {
    broadcasts.push_back(entry.request.name);
    entry.work->complete();
  }
  std::vector<std::vector<std::string>> allreduces;
  std::vector<std::string> broadcasts;
  int last_set_size = 0;
  bool fail = false;
};

// Queues `entry` with a new Work (kept in `works`) and returns the Response
// of two ranks that submitted it alike.
Response enqueue(TensorQueue& queue, std::vector<std::shared_ptr<detail::WorkState>>& works,
                 TensorEntry entry) {
  entry.work = std::make_shared<detail::WorkState>();
  works.push_back(entry.work);
  Response response;
  response.op_type = entry.request.op_type;
  response.name = entry.request.name;
  response.first_dims = {entry.request.shape[0], entry.request.shape[0]};
  queue.push(std::move(entry));
  return response;
}

// One rank's cycle after some ranks joined: this rank's tensors queued, and
// the responses whose template (the lowest submitter's request) is on
// another rank's GPU.
struct JoinCycle {
  // `data` null: this rank had joined instead of submitting `request`.
  void add(const Request& request, void* data, std::int32_t joined, Device template_device) {
    if (data) {
      TensorEntry entry;
      entry.request = request;
      entry.input = TensorView(data, request.dtype, request.shape, request.device);
      entry.output = entry.input;
      enqueue(queue, works, std::move(entry));
    }
    Response response;
    response.name = request.name;
    response.joined_ranks = {joined};
    response.joined_template = request;
    response.joined_template.device = template_device;
    responses.push_back(response);
  }
  void expect_done() const {
    for (const auto& work : works) EXPECT_TRUE(work->done() && !work->error());
  }
  TensorQueue queue;
  std::vector<std::shared_ptr<detail::WorkState>> works;
  std::vector<Response> responses;
};

// A device-side backend with every collective (NCCL): records the plans of
// those whose result it allocates.
class FakeResultDevice : public FakeDevice {
 public:
  void allgather(const TensorEntry& entry, const ResultPlan& plan) override { take(entry, plan); }
  void alltoall(const TensorEntry& entry, const ResultPlan& plan) override { take(entry, plan); }
  void reducescatter(const TensorEntry& entry, const ResultPlan& plan, double divisor) override {
    take(entry, plan);
    divisors.push_back(divisor);
  }
  std::vector<ResultPlan> plans;
  std::vector<double> divisors;

 private:
  void take(const TensorEntry& entry, const ResultPlan& plan) {
    plans.push_back(plan);
    entry.work->complete();
  }
};

class DeviceRoutingTest : public ::testing::Test {
 protected:
  DeviceRoutingTest() { topology_.size = 2; }

  // Queues a tensor of 4 floats on `device` and returns its Response.
  Response submit(const std::string& name, OpType op, Device device) {
    TensorEntry entry;
    entry.request.name = name;
    entry.request.op_type = op;
    entry.request.shape = {4};
    entry.request.device = device;
    entry.input = TensorView(data_, DataType::kFloat32, {4}, device);
    entry.output = entry.input;
    return enqueue(queue_, works_, std::move(entry));
  }
  std::string error_of(std::size_t i) {
    EXPECT_TRUE(works_[i]->done());
    try {
      if (works_[i]->error()) std::rethrow_exception(works_[i]->error());
    } catch (const InvalidArgument& e) {
      return e.what();
    } catch (const std::exception& e) {
      return std::string("other error: ") + e.what();
    }
    return "";
  }

  Topology topology_;
  FakeBackend backend_;
  FakeDevice device_;
  TensorQueue queue_;
  float data_[8] = {};
  std::vector<std::shared_ptr<detail::WorkState>> works_;
};

TEST_F(DeviceRoutingTest, FusedCudaAllreducesReachTheDeviceAsOneGroup) {
  CollectiveExecutor executor(backend_, topology_, nullptr, &device_, kFusionThreshold);
  std::vector<Response> responses;
  for (const char* name : {"a", "b", "c"}) {
    responses.push_back(submit(name, OpType::kAllreduce, Device::cuda(0)));
  }
  execute_all(executor, responses, queue_);
  ASSERT_EQ(device_.allreduces.size(), 1u);
  EXPECT_EQ(device_.allreduces[0], (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(device_.last_set_size, 2);
  EXPECT_EQ(backend_.calls, 0);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(error_of(i), "");
}

TEST_F(DeviceRoutingTest, CudaAndCpuTensorsAreNotFusedTogether) {
  CollectiveExecutor executor(backend_, topology_, nullptr, &device_, kFusionThreshold);
  execute_all(executor,
              {submit("gpu", OpType::kAllreduce, Device::cuda(0)),
               submit("cpu", OpType::kAllreduce, Device::cpu())},
              queue_);
  ASSERT_EQ(device_.allreduces.size(), 1u);
  EXPECT_EQ(device_.allreduces[0], std::vector<std::string>{"gpu"});
  EXPECT_EQ(backend_.calls, 1);
}

// The fusion key has the device type only (ranks use different GPUs), so
// one rank's tensors on two GPUs fuse: the group is refused before the
// device sees it (NCCL would read cuda:1's memory on cuda:0's stream).
TEST_F(DeviceRoutingTest, FusedGroupOnTwoGpusOfOneRankIsRefused) {
  CollectiveExecutor executor(backend_, topology_, nullptr, &device_, kFusionThreshold);
  execute_all(executor,
              {submit("a", OpType::kAllreduce, Device::cuda(0)),
               submit("b", OpType::kAllreduce, Device::cuda(1))},
              queue_);
  EXPECT_TRUE(device_.allreduces.empty());
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_NE(error_of(i).find("same GPU: 'a' is on cuda:0, 'b' on cuda:1"), std::string::npos)
        << error_of(i);
  }
}

TEST_F(DeviceRoutingTest, BroadcastGoesToTheDeviceOtherOpsFailClearly) {
  CollectiveExecutor executor(backend_, topology_, nullptr, &device_, kFusionThreshold);
  execute_all(executor,
              {submit("b", OpType::kBroadcast, Device::cuda(0)),
               submit("g", OpType::kAllgather, Device::cuda(0))},
              queue_);
  EXPECT_EQ(device_.broadcasts, std::vector<std::string>{"b"});
  EXPECT_EQ(error_of(0), "");
  EXPECT_NE(error_of(1).find("allgather of tensor 'g': not supported yet for CUDA tensors"),
            std::string::npos)
      << error_of(1);
  EXPECT_EQ(backend_.calls, 0);
}

TEST_F(DeviceRoutingTest, CollectivesWithResultsGetTheirShapesAndCounts) {
  FakeResultDevice device;
  CollectiveExecutor executor(backend_, topology_, nullptr, &device, kFusionThreshold);
  std::vector<Response> responses{submit("g", OpType::kAllgather, Device::cuda(0)),
                                  submit("t", OpType::kAlltoall, Device::cuda(0)),
                                  submit("r", OpType::kReducescatter, Device::cuda(0))};
  responses[0].first_dims = {4, 1};
  responses[1].splits = {3, 1, 2, 2};  // rank 0 sends 3 rows to itself, 1 to rank 1
  execute_all(executor, responses, queue_);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(error_of(i), "");
  ASSERT_EQ(device.plans.size(), 3u);
  EXPECT_EQ(device.plans[0].shape, std::vector<std::int64_t>{5});
  EXPECT_EQ(device.plans[0].counts, (std::vector<std::size_t>{4, 1}));
  EXPECT_EQ(device.plans[1].send_counts, (std::vector<std::size_t>{3, 1}));
  EXPECT_EQ(device.plans[1].counts, (std::vector<std::size_t>{3, 2}));
  EXPECT_EQ(device.plans[1].received_splits, (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(device.plans[1].shape, std::vector<std::int64_t>{5});
  EXPECT_EQ(device.plans[2].counts, (std::vector<std::size_t>{2, 2}));
  EXPECT_EQ(device.plans[2].shape, std::vector<std::int64_t>{2});
  EXPECT_EQ(device.divisors, std::vector<double>{1.0});
  EXPECT_EQ(backend_.calls, 0);
}

TEST_F(DeviceRoutingTest, WithoutDeviceOperationsCudaTensorsAreRefused) {
  CollectiveExecutor executor(backend_, topology_, nullptr, nullptr, kFusionThreshold);
  execute_all(executor, {submit("x", OpType::kAllreduce, Device::cuda(1))}, queue_);
  EXPECT_NE(error_of(0).find("tensors on cuda:1 need a build with CUDA"), std::string::npos)
      << error_of(0);
  EXPECT_EQ(backend_.calls, 0);
}

// Three ranks, one GPU each. Rank 1 submitted "b" (on cuda:1), then joined
// before "a", which ranks 0 and 2 submitted; rank 0 joined before "b". Each
// response's template is its lowest submitter's request, so rank 1's zeros
// for "a" say cuda:0. Every rank must fuse "a" and "b" alike.
TEST_F(DeviceRoutingTest, JoinedZerosFuseAsTheOtherRanksTensors) {
  auto run_rank = [](int rank, std::vector<std::string> submitted) {
    Topology topology;
    topology.size = 3;
    topology.rank = rank;
    FakeBackend backend;
    FakeDevice device;
    std::vector<float> data(4);
    JoinCycle cycle;
    for (const std::string name : {"a", "b"}) {
      Request request;
      request.name = name;
      request.shape = {4};
      request.device = Device::cuda(rank);
      const bool mine = std::find(submitted.begin(), submitted.end(), name) != submitted.end();
      const bool a = name == "a";
      cycle.add(request, mine ? data.data() : nullptr, a ? 1 : 0, Device::cuda(a ? 0 : 1));
    }
    CollectiveExecutor executor(backend, topology, nullptr, &device, kFusionThreshold);
    execute_all(executor, cycle.responses, cycle.queue);
    cycle.expect_done();
    EXPECT_EQ(device.last_set_size, 3);  // Average: over every rank, joined ones too
    return device.allreduces;
  };
  using Groups = std::vector<std::vector<std::string>>;
  EXPECT_EQ(run_rank(0, {"a"}), (Groups{{"a", "b (zeros of 4)"}}));
  EXPECT_EQ(run_rank(1, {"b"}), (Groups{{"a (zeros of 4)", "b"}}));
  EXPECT_EQ(run_rank(2, {"a", "b"}), (Groups{{"a", "b"}}));
}

TEST_F(DeviceRoutingTest, DeviceFailureFailsEveryMember) {
  device_.fail = true;
  CollectiveExecutor executor(backend_, topology_, nullptr, &device_, kFusionThreshold);
  execute_all(executor,
              {submit("a", OpType::kAllreduce, Device::cuda(0)),
               submit("b", OpType::kAllreduce, Device::cuda(0))},
              queue_);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(error_of(i), "other error: device refused");
  }
}

// Two ranks holding the same data, float32 only (the executor widens
// float16 to float32 first): Sum doubles, gathers repeat this rank's data.
class MirrorBackend : public Backend {
 public:
  const char* name() const override { return "mirror"; }
  BackendCapabilities capabilities() const override { return {}; }
  void allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) override {
    ASSERT_EQ(dtype, DataType::kFloat32);
    ASSERT_EQ(op, ReduceOp::kSum);
    for (std::size_t i = 0; i < count; ++i) static_cast<float*>(buffer)[i] *= 2;
    calls.push_back("allreduce " + std::to_string(count));
  }
  void allgatherv(const void* input, void* output, const std::vector<std::size_t>& counts,
                  DataType dtype) override {
    const std::size_t bytes = counts[0] * dtype_size(dtype);
    std::memcpy(output, input, bytes);
    std::memcpy(static_cast<char*>(output) + bytes, input, bytes);
    calls.push_back("allgatherv");
  }
  void broadcast(void* buffer, std::size_t, DataType, int root) override {
    static_cast<float*>(buffer)[0] = float(root) + 100;  // root's data differs
    calls.push_back("broadcast");
  }
  void alltoallv(const void* input, const std::vector<std::size_t>& send_counts, void* output,
                 const std::vector<std::size_t>&, DataType dtype) override {
    // Rank 0: from each rank its first segment (what every rank sends to 0).
    const std::size_t bytes = send_counts[0] * dtype_size(dtype);
    std::memcpy(output, input, bytes);
    std::memcpy(static_cast<char*>(output) + bytes, input, bytes);
    calls.push_back("alltoallv");
  }
  void reducescatter(void* buffer, void* output, const std::vector<std::size_t>& counts,
                     DataType dtype, ReduceOp) override {
    ASSERT_EQ(dtype, DataType::kFloat32);
    for (std::size_t i = 0; i < counts[0]; ++i) {
      static_cast<float*>(output)[i] = 2 * static_cast<float*>(buffer)[i];
    }
    calls.push_back("reducescatter");
  }
  std::vector<std::string> calls;
};

// "Device" memory is host memory here: stage_in copies into buffers of its
// own, finish_in_place copies back, results complete the Works at once.
class FakeStaging : public DeviceOperations, public HostStaging {
 public:
  const char* name() const override { return "fake-staged"; }
  std::shared_ptr<void> record_ready(const TensorView&) override { return nullptr; }
  HostStaging* staging() override { return this; }
  void allreduce(const std::vector<const TensorEntry*>&, int) override { FAIL(); }
  void broadcast(const TensorEntry&) override { FAIL(); }

  std::vector<TensorView> stage_in(const std::vector<const TensorEntry*>& group) override {
    if (fail) throw BackendError("copy failed");
    std::vector<TensorView> views;
    host_.clear();
    for (const TensorEntry* e : group) {
      host_.emplace_back(e->input.size_bytes());
      std::memcpy(host_.back().data(), e->input.data, e->input.size_bytes());
      views.emplace_back(host_.back().data(), e->input.dtype, e->input.shape);
    }
    staged_groups.push_back(group.size());
    return views;
  }
  void finish_in_place(const std::vector<const TensorEntry*>& group,
                       const std::vector<TensorView>& staged) override {
    for (std::size_t i = 0; i < group.size(); ++i) {
      EXPECT_EQ(staged[i].device, Device::cpu());
      std::memcpy(group[i]->output.data, staged[i].data, staged[i].size_bytes());
      group[i]->work->complete();
    }
  }
  void finish_with_result(const TensorEntry& entry, const Tensor& result,
                          std::vector<std::int64_t> received_splits) override {
    entry.work->complete(result, std::move(received_splits));
  }
  std::vector<std::size_t> staged_groups;
  bool fail = false;

 private:
  std::vector<std::vector<unsigned char>> host_;
};

class StagedRoutingTest : public ::testing::Test {
 protected:
  StagedRoutingTest() { topology_.size = 2; }

  template <typename T>
  Response submit(const std::string& name, OpType op, std::vector<T>& in, std::vector<T>& out,
                  Request request = {}) {
    TensorEntry entry;
    request.name = name;
    request.op_type = op;
    request.dtype = dtype_of<T>();
    request.shape = {static_cast<std::int64_t>(in.size())};
    request.device = Device::cuda(0);
    entry.request = request;
    entry.input = TensorView(in.data(), dtype_of<T>(), request.shape, Device::cuda(0));
    entry.output = TensorView(out.data(), dtype_of<T>(), request.shape, Device::cuda(0));
    return enqueue(queue_, works_, std::move(entry));
  }
  void expect_ok() {
    for (auto& w : works_) {
      ASSERT_TRUE(w->done());
      EXPECT_FALSE(w->error());
    }
  }

  Topology topology_;
  MirrorBackend backend_;
  FakeStaging staging_;
  TensorQueue queue_;
  std::vector<std::shared_ptr<detail::WorkState>> works_;
};

TEST_F(StagedRoutingTest, FusedAllreduceRunsOnTheCpuBackendWithScaling) {
  CollectiveExecutor executor(backend_, topology_, nullptr, &staging_, kFusionThreshold);
  std::vector<float> a{1, 2, 3}, a_out(3), b{4, 5}, c{6};
  Request r;
  r.reduce_op = ReduceOp::kAverage;
  r.prescale_factor = 2.0;
  r.postscale_factor = 3.0;
  execute_all(executor,
              {submit("a", OpType::kAllreduce, a, a_out, r),
               submit("b", OpType::kAllreduce, b, b, r), submit("c", OpType::kAllreduce, c, c, r)},
              queue_);
  expect_ok();
  EXPECT_EQ(staging_.staged_groups, std::vector<std::size_t>{3});  // one fused group
  EXPECT_EQ(backend_.calls, std::vector<std::string>{"allreduce 6"});
  // 3 * (2x + 2x) / 2 = 6x
  EXPECT_EQ(a_out, (std::vector<float>{6, 12, 18}));
  EXPECT_EQ(a, (std::vector<float>{1, 2, 3}));  // out of place: input untouched
  EXPECT_EQ(b, (std::vector<float>{24, 30}));
  EXPECT_EQ(c, std::vector<float>{36});
}

TEST_F(StagedRoutingTest, Float16IsReducedInFloat32LikeCpuTensors) {
  CollectiveExecutor executor(backend_, topology_, nullptr, &staging_, kFusionThreshold);
  std::vector<float16_t> x{float16_t(1.5f), float16_t(-2.0f)};
  Request r;
  r.reduce_op = ReduceOp::kSum;
  execute_all(executor, {submit("h", OpType::kAllreduce, x, x, r)}, queue_);
  expect_ok();
  EXPECT_EQ(float(x[0]), 3.0f);
  EXPECT_EQ(float(x[1]), -4.0f);
}

TEST_F(StagedRoutingTest, EveryOtherCollectiveIsStagedToo) {
  CollectiveExecutor executor(backend_, topology_, nullptr, &staging_, kFusionThreshold);
  std::vector<float> g{1, 2}, bc{7, 8}, at{3, 4}, rs{5, 6, 7, 8};
  Request bcast;
  bcast.root_rank = 1;
  Request rsr;
  rsr.reduce_op = ReduceOp::kSum;
  std::vector<Response> responses;
  responses.push_back(submit("g", OpType::kAllgather, g, g));
  responses.push_back(submit("b", OpType::kBroadcast, bc, bc, bcast));
  responses.push_back(submit("t", OpType::kAlltoall, at, at));
  responses.back().splits = {1, 1, 1, 1};
  responses.push_back(submit("r", OpType::kReducescatter, rs, rs, rsr));
  execute_all(executor, responses, queue_);
  expect_ok();
  EXPECT_EQ(backend_.calls,
            (std::vector<std::string>{"allgatherv", "broadcast", "alltoallv", "reducescatter"}));
  const Tensor& gathered = works_[0]->output();
  ASSERT_EQ(gathered.shape(), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(gathered.data_as<float>()[3], 2.0f);
  EXPECT_EQ(bc, (std::vector<float>{101, 8}));  // copied back to the tensor
  const Tensor& exchanged = works_[2]->output();
  EXPECT_EQ(exchanged.data_as<float>()[1], 3.0f);
  EXPECT_EQ(works_[2]->received_splits(), (std::vector<std::int64_t>{1, 1}));
  const Tensor& share = works_[3]->output();
  ASSERT_EQ(share.shape(), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(share.data_as<float>()[1], 12.0f);
  EXPECT_EQ(rs, (std::vector<float>{5, 6, 7, 8}));  // the input is not clobbered
}

// Each staged collective's CPU op is on its tensor's row of the timeline
// (the staging's copies are the staging's own events).
TEST_F(StagedRoutingTest, TimelineShowsTheCpuOpOfEveryStagedCollective) {
  const std::string path = test::timeline_path("staged_ops");
  Timeline timeline(1 << 20);
  timeline.start(path, false);
  CollectiveExecutor executor(backend_, topology_, &timeline, &staging_, kFusionThreshold);
  std::vector<float> a{1, 2}, g{1, 2}, bc{7, 8}, at{3, 4}, rs{5, 6, 7, 8};
  std::vector<Response> responses;
  responses.push_back(submit("a", OpType::kAllreduce, a, a));
  responses.push_back(submit("g", OpType::kAllgather, g, g));
  responses.push_back(submit("b", OpType::kBroadcast, bc, bc));
  responses.push_back(submit("t", OpType::kAlltoall, at, at));
  responses.back().splits = {1, 1, 1, 1};
  responses.push_back(submit("r", OpType::kReducescatter, rs, rs));
  execute_all(executor, responses, queue_);
  expect_ok();
  timeline.stop();
  std::vector<std::string> traced;
  for (const test::TracedEvent& e : test::traced_events(path)) {
    traced.push_back(e.row + " " + e.name);
  }
  EXPECT_EQ(traced, (std::vector<std::string>{"a MIRROR_ALLREDUCE", "g MIRROR_ALLGATHER",
                                              "b MIRROR_BROADCAST", "t MIRROR_ALLTOALL",
                                              "r MIRROR_REDUCESCATTER"}));
  std::remove(path.c_str());
}

// Records what each allreduce is given (the buffer is not changed).
class RecordingBackend : public MirrorBackend {
 public:
  void allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp) override {
    ASSERT_EQ(dtype, DataType::kFloat32);
    const float* values = static_cast<const float*>(buffer);
    received.emplace_back(values, values + count);
  }
  std::vector<std::vector<float>> received;
};

// Two ranks; rank 1 has joined. Rank 0 submits a fused group of float16
// tensors, a float32 and a bfloat16 one; rank 1 contributes zeros through
// the CPU backend without staging anything (it needs no GPU), in the same
// layout and the same float32 staging as rank 0.
TEST_F(StagedRoutingTest, JoinedRankContributesHostZerosInTheSameLayout) {
  auto run_rank = [](int rank, std::vector<std::vector<float>>& received) {
    Topology topology;
    topology.size = 2;
    topology.rank = rank;
    RecordingBackend backend;
    FakeStaging staging;
    std::vector<float16_t> h1(3, float16_t(2.0f)), h2(2, float16_t(4.0f));
    std::vector<float> f(5, 1.0f);
    std::vector<bfloat16_t> b(2, bfloat16_t(3.0f));
    JoinCycle cycle;
    auto add = [&](const std::string& name, DataType dtype, void* data, std::int64_t n) {
      Request request;
      request.name = name;
      request.dtype = dtype;
      request.reduce_op = ReduceOp::kAverage;
      request.shape = {n};
      request.device = Device::cuda(rank);
      cycle.add(request, rank == 0 ? data : nullptr, 1, Device::cuda(0));
    };
    add("h1", DataType::kFloat16, h1.data(), 3);
    add("f", DataType::kFloat32, f.data(), 5);
    add("h2", DataType::kFloat16, h2.data(), 2);
    add("b", DataType::kBFloat16, b.data(), 2);
    CollectiveExecutor executor(backend, topology, nullptr, &staging, kFusionThreshold);
    execute_all(executor, cycle.responses, cycle.queue);
    received = backend.received;
    cycle.expect_done();
    if (rank == 0) {
      // Only rank 0 contributed (the backend added nothing): Average
      // divides by both ranks, the joined one included (as Horovod).
      EXPECT_EQ(float(h1[0]), 1.0f);
      EXPECT_EQ(float(h2[1]), 2.0f);
      EXPECT_EQ(f[4], 0.5f);
      EXPECT_EQ(float(b[1]), 1.5f);
    }
    return staging.staged_groups;
  };
  std::vector<std::vector<float>> submitted, joined;
  EXPECT_EQ(run_rank(0, submitted), (std::vector<std::size_t>{2, 1, 1}));
  EXPECT_TRUE(run_rank(1, joined).empty());
  EXPECT_EQ(submitted, (std::vector<std::vector<float>>{{2, 2, 2, 4, 4}, {1, 1, 1, 1, 1}, {3, 3}}));
  EXPECT_EQ(joined, (std::vector<std::vector<float>>{{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0}}));
}

// Rank 1 submitted "mine" (rank 0 had joined), then joined before "other":
// both fuse, and only "mine" is staged; one backend call reduces both.
TEST_F(StagedRoutingTest, MixedGroupStagesOnlyTheSubmittedTensor) {
  topology_.rank = 1;
  CollectiveExecutor executor(backend_, topology_, nullptr, &staging_, kFusionThreshold);
  std::vector<float> mine{1, 2};
  Response submitted = submit("mine", OpType::kAllreduce, mine, mine);
  submitted.joined_ranks = {0};
  Request other;
  other.name = "other";
  other.shape = {3};
  other.device = Device::cuda(1);
  Response joined;
  joined.name = "other";
  joined.joined_ranks = {1};
  joined.joined_template = other;
  execute_all(executor, {joined, submitted}, queue_);
  expect_ok();
  EXPECT_EQ(staging_.staged_groups, std::vector<std::size_t>{1});
  EXPECT_EQ(backend_.calls, std::vector<std::string>{"allreduce 5"});
  EXPECT_EQ(mine, (std::vector<float>{2, 4}));  // the mirror doubles
}

TEST_F(StagedRoutingTest, StagingFailureFailsTheWorks) {
  staging_.fail = true;
  CollectiveExecutor executor(backend_, topology_, nullptr, &staging_, kFusionThreshold);
  std::vector<float> a{1}, b{2};
  execute_all(executor,
              {submit("a", OpType::kAllreduce, a, a), submit("b", OpType::kAllreduce, b, b)},
              queue_);
  for (auto& w : works_) {
    ASSERT_TRUE(w->done());
    EXPECT_TRUE(w->error());
  }
  EXPECT_TRUE(backend_.calls.empty());
}

TEST(HostStaging, PlanAlignsEveryTensor) {
  const StagingPlan plan = plan_staging({10, 0, 256, 1}, 256);
  EXPECT_EQ(plan.offsets, (std::vector<std::size_t>{0, 256, 256, 512}));
  EXPECT_EQ(plan.total, 768u);
  EXPECT_EQ(plan_staging({}).total, 0u);
}

TEST(HostStaging, BuffersGrowByDoublingInWholeMebibytes) {
  constexpr std::size_t kMiB = 1 << 20;
  EXPECT_EQ(grown_capacity(0, 0), 0u);
  EXPECT_EQ(grown_capacity(0, 10), kMiB);
  EXPECT_EQ(grown_capacity(kMiB, kMiB), kMiB);  // enough: kept
  EXPECT_EQ(grown_capacity(kMiB, kMiB + 1), 2 * kMiB);
  EXPECT_EQ(grown_capacity(2 * kMiB, 9 * kMiB + 5), 10 * kMiB);
}

}  // namespace
}  // namespace hvd
