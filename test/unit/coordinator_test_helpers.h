// What the one-rank coordinator tests share: a controller of one rank, a
// submission as the API makes it, and a bounded wait for a condition.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/negotiation/controller.h"
#include "core/negotiation/tensor_queue.h"
#include "core/negotiation/work_state.h"

namespace hvd {

// The control plane of a job of one rank: every exchange returns at once.
class SoloController : public Controller {
 public:
  const Topology& topology() const override { return topology_; }
  std::vector<std::string> gather_to_root(const std::string& message) override { return {message}; }
  std::string broadcast_from_root(const std::string& message) override { return message; }
  void bitwise_and(std::vector<std::uint64_t>&) override {}

 private:
  Topology topology_;
};

// An in-place sum allreduce of `data` on `device`, named and described as
// ProcessSetRuntime leaves a submission, its Work signalling `queue`'s
// coordinator.
inline TensorEntry allreduce_entry(TensorQueue& queue, const std::string& name,
                                   std::vector<float>& data, Device device = Device::cpu()) {
  TensorEntry entry;
  entry.request.op_type = OpType::kAllreduce;
  entry.request.name = name;
  entry.request.dtype = DataType::kFloat32;
  entry.request.shape = {static_cast<std::int64_t>(data.size())};
  entry.request.reduce_op = ReduceOp::kSum;
  entry.request.device = device;
  entry.input = TensorView(data.data(), DataType::kFloat32, entry.request.shape, device);
  entry.output = entry.input;
  entry.work = std::make_shared<detail::WorkState>(queue.wakeup());
  return entry;
}

// Polls `condition` for up to 10 s.
template <typename Condition>
bool eventually(Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace hvd
