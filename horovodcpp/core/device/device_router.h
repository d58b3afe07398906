// DeviceRouter: the agreed collectives of CUDA tensors, handed to the
// process set's DeviceOperations: run on the device (NCCL), or staged
// through host memory and run by CpuCollectives (MPI, Gloo). Their Works
// complete later, from the device's side.
#pragma once

#include <vector>

#include "core/device/device_operations.h"
#include "core/execution/cpu_collectives.h"
#include "core/negotiation/controller.h"
#include "core/negotiation/message.h"
#include "core/negotiation/tensor_queue.h"

namespace hvd {

class DeviceRouter {
 public:
  // `device` may be null (a build without CUDA): CUDA tensors are refused.
  DeviceRouter(DeviceOperations* device, CpuCollectives& cpu, const Topology& topology);

  // The collective of one tensor, or of a fused allreduce group. Throws
  // (before anything runs) what every rank refuses alike.
  void run(const Response& response, const std::vector<const TensorEntry*>& group);

  // Whether the device zeroes a joined rank's part in device memory of its
  // own (device-side operations); staged ones take host zeros.
  bool zeroes_on_device() const { return device_ != nullptr && device_->staging() == nullptr; }

 private:
  void run_staged(HostStaging& staging, const Response& response,
                  const std::vector<const TensorEntry*>& group);
  // CUDA tensors can run (a build with CUDA), and the group's submitted
  // tensors are on one GPU.
  void check_group(const Response& response, const std::vector<const TensorEntry*>& group) const;

  DeviceOperations* device_;
  CpuCollectives& cpu_;
  const Topology& topology_;
};

}  // namespace hvd
