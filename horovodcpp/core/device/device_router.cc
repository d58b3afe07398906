#include "core/device/device_router.h"

#include "base/check.h"

namespace hvd {
namespace {

[[noreturn]] void refuse_on_device(const Response& response) {
  HVD_THROW(InvalidArgument, op_type_name(response.op_type) << " of tensor '" << response.name
                                                            << "': not supported for CUDA tensors");
}

}  // namespace

DeviceRouter::DeviceRouter(DeviceOperations* device, CpuCollectives& cpu, const Topology& topology)
    : device_(device), cpu_(cpu), topology_(topology) {}

// Every rank agreed on the device type, so every rank fails alike at the
// first check. The fusion key leaves the GPU index out (ranks use different
// GPUs), so a fused group may hold this rank's tensors of two GPUs: refused
// here, before the device reads one GPU's memory from the other's stream.
void DeviceRouter::check_group(const Response& response,
                               const std::vector<const TensorEntry*>& group) const {
  const TensorEntry& first = *group.front();
  HVD_CHECK(device_ != nullptr, InvalidArgument,
            op_type_name(response.op_type)
                << " of tensor '" << response.name << "': tensors on " << first.request.device.str()
                << " need a build with CUDA (this one has none)");
  const TensorEntry* submitted = nullptr;  // a joined rank's zeros are on no GPU of this rank
  for (const TensorEntry* entry : group) {
    if (entry->joined) continue;
    if (submitted == nullptr) submitted = entry;
    HVD_CHECK(entry->request.device == submitted->request.device, InvalidArgument,
              "CUDA tensors of one rank must all be on the same GPU: '"
                  << submitted->request.name << "' is on " << submitted->request.device.str()
                  << ", '" << entry->request.name << "' on " << entry->request.device.str());
  }
}

void DeviceRouter::run(const Response& response, const std::vector<const TensorEntry*>& group) {
  check_group(response, group);
  if (HostStaging* staging = device_->staging()) return run_staged(*staging, response, group);
  const TensorEntry& entry = *group.front();
  const int rank = topology_.rank;
  const int size = topology_.size;
  switch (response.op_type) {
    case OpType::kAllreduce:
      // Horovod's GPU Adasum sums inside each host and runs Adasum across
      // hosts only: a different reduction, not offered.
      HVD_CHECK(entry.request.reduce_op != ReduceOp::kAdasum, InvalidArgument,
                "allreduce of tensor '"
                    << response.name << "': Adasum of CUDA tensors is not supported on "
                    << device_->name()
                    << "; HOROVODCPP_GPU_OPERATIONS=mpi or gloo stages them through host memory");
      return device_->allreduce(group, size);
    case OpType::kBroadcast: return device_->broadcast(entry);
    case OpType::kAllgather: return device_->allgather(entry, gather_plan(entry.request, response));
    case OpType::kAlltoall:
      return device_->alltoall(entry, exchange_plan(entry.request, response, rank, size));
    case OpType::kReducescatter:
      return device_->reducescatter(entry, scatter_plan(entry.request, rank, size),
                                    average_divisor(entry.request.reduce_op, size));
    default: refuse_on_device(response);
  }
}

// The CPU paths run unchanged on host copies of the entries: fusion,
// scaling, Average and float16/bfloat16 in float32 behave as for CPU tensors.
// A joined rank's zeros are host memory already: they are not staged, so a
// joined rank needs no GPU, and its layout is that of the other ranks.
void DeviceRouter::run_staged(HostStaging& staging, const Response& response,
                              const std::vector<const TensorEntry*>& group) {
  std::vector<const TensorEntry*> submitted;
  for (const TensorEntry* entry : group) {
    if (!entry->joined) submitted.push_back(entry);
  }
  const std::vector<TensorView> staged =
      submitted.empty() ? std::vector<TensorView>() : staging.stage_in(submitted);
  std::vector<TensorEntry> host(group.size());
  std::vector<const TensorEntry*> members;
  for (std::size_t i = 0, s = 0; i < group.size(); ++i) {
    host[i].request = group[i]->request;
    host[i].request.device = Device::cpu();
    // Submitted: reduced in place, then copied to the device output.
    host[i].input = group[i]->joined ? group[i]->input : staged[s++];
    host[i].output = host[i].input;
    host[i].work = group[i]->work;
    members.push_back(&host[i]);
  }
  std::vector<std::int64_t> received_splits;
  const Tensor result = cpu_.run(response, members, received_splits);
  switch (response.op_type) {
    case OpType::kAllreduce:
      if (submitted.empty()) return;  // nobody waits for a joined rank's zeros
      return staging.finish_in_place(submitted, staged);
    case OpType::kBroadcast: return staging.finish_in_place(group, staged);
    case OpType::kAllgather:
    case OpType::kAlltoall:
    case OpType::kReducescatter:
      return staging.finish_with_result(*group.front(), result, std::move(received_splits));
    default: refuse_on_device(response);
  }
}

}  // namespace hvd
