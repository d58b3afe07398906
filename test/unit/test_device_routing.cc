// CollectiveExecutor's routing of CUDA tensors to DeviceOperations, with
// fakes (no GPU): fused allreduces reach the device as one group, broadcast
// goes there too, unsupported ops and builds without device operations fail
// the Work with a clear error, CPU tensors stay on the backend.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/collective_executor.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

class FakeBackend : public Backend {
 public:
  const char* name() const override { return "fake"; }
  BackendCapabilities capabilities() const override { return {}; }
  void allreduce(void*, std::size_t, DataType, ReduceOp) override { ++calls; }
  void allgatherv(const void*, void*, const std::vector<std::size_t>&, DataType) override { ++calls; }
  void broadcast(void*, std::size_t, DataType, int) override { ++calls; }
  void alltoallv(const void*, const std::vector<std::size_t>&, void*,
                 const std::vector<std::size_t>&, DataType) override { ++calls; }
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
  void allreduce(const std::vector<const TensorEntry*>& group, int contributors) override {
    if (fail) throw BackendError("device refused");
    std::vector<std::string> names;
    for (const TensorEntry* e : group) {
      names.push_back(e->request.name);
      e->work->complete();
    }
    allreduces.push_back(names);
    last_contributors = contributors;
  }
  void broadcast(const TensorEntry& entry) override {
    broadcasts.push_back(entry.request.name);
    entry.work->complete();
  }
  std::vector<std::vector<std::string>> allreduces;
  std::vector<std::string> broadcasts;
  int last_contributors = 0;
  bool fail = false;
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
    entry.work = std::make_shared<detail::WorkState>();
    works_.push_back(entry.work);
    queue_.push(std::move(entry));
    Response response;
    response.op_type = op;
    response.name = name;
    response.first_dims = {4, 4};
    return response;
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
  CollectiveExecutor executor(backend_, topology_, nullptr, &device_);
  std::vector<Response> responses;
  for (const char* name : {"a", "b", "c"}) {
    responses.push_back(submit(name, OpType::kAllreduce, Device::cuda(0)));
  }
  executor.execute_all(responses, queue_);
  ASSERT_EQ(device_.allreduces.size(), 1u);
  EXPECT_EQ(device_.allreduces[0], (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(device_.last_contributors, 2);
  EXPECT_EQ(backend_.calls, 0);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(error_of(i), "");
}

TEST_F(DeviceRoutingTest, CudaAndCpuTensorsAreNotFusedTogether) {
  CollectiveExecutor executor(backend_, topology_, nullptr, &device_);
  executor.execute_all({submit("gpu", OpType::kAllreduce, Device::cuda(0)),
                        submit("cpu", OpType::kAllreduce, Device::cpu())},
                       queue_);
  ASSERT_EQ(device_.allreduces.size(), 1u);
  EXPECT_EQ(device_.allreduces[0], std::vector<std::string>{"gpu"});
  EXPECT_EQ(backend_.calls, 1);
}

TEST_F(DeviceRoutingTest, BroadcastGoesToTheDeviceOtherOpsFailClearly) {
  CollectiveExecutor executor(backend_, topology_, nullptr, &device_);
  executor.execute_all({submit("b", OpType::kBroadcast, Device::cuda(0)),
                        submit("g", OpType::kAllgather, Device::cuda(0))},
                       queue_);
  EXPECT_EQ(device_.broadcasts, std::vector<std::string>{"b"});
  EXPECT_EQ(error_of(0), "");
  EXPECT_NE(error_of(1).find("allgather of tensor 'g': not supported yet for CUDA tensors"),
            std::string::npos)
      << error_of(1);
  EXPECT_EQ(backend_.calls, 0);
}

TEST_F(DeviceRoutingTest, WithoutDeviceOperationsCudaTensorsAreRefused) {
  CollectiveExecutor executor(backend_, topology_, nullptr, nullptr);
  executor.execute_all({submit("x", OpType::kAllreduce, Device::cuda(1))}, queue_);
  EXPECT_NE(error_of(0).find("tensors on cuda:1 need a build with NCCL"), std::string::npos)
      << error_of(0);
  EXPECT_EQ(backend_.calls, 0);
}

TEST_F(DeviceRoutingTest, DeviceFailureFailsEveryMember) {
  device_.fail = true;
  CollectiveExecutor executor(backend_, topology_, nullptr, &device_);
  executor.execute_all({submit("a", OpType::kAllreduce, Device::cuda(0)),
                        submit("b", OpType::kAllreduce, Device::cuda(0))},
                       queue_);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(error_of(i), "other error: device refused");
  }
}

}  // namespace
}  // namespace hvd
