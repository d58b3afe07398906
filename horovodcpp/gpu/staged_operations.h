// StagedOperations: CUDA tensors' collectives on the set's CPU backend (MPI,
// Gloo; HOROVODCPP_GPU_OPERATIONS=mpi|gloo, or a build without NCCL), for
// clusters without NCCL and for several ranks sharing one GPU.
//
// On the coordinator thread, per collective: the staging stream waits for
// each tensor's ready event and copies the (fused) inputs into a pinned
// host buffer; the coordinator waits for those copies only; the executor
// runs the CPU collective on them; the results are copied back to the
// device on the staging stream and a completion event is recorded there,
// with which the Works complete (a caller's wait() makes its stream wait for
// it); a CompletionPoller finishes them when it has happened. The pinned buffers are kept and
// grown, never freed while a copy may still use them. The timeline shows the copies per tensor
// around the CPU backend's op: MEMCPY_IN_HOST_BUFFER (waiting for the tensor's producer included)
// and MEMCPY_OUT_HOST_BUFFER (until the poller sees it done).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/device/completion_poller.h"
#include "core/device/device_operations.h"
#include "gpu/cuda_events.h"

namespace hvd {

// Page-locked host memory that grows (grown_capacity) and is reused.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  // At least `bytes` long. Growing frees the old memory: the caller
  // guarantees no copy uses it any more.
  unsigned char* reserve(std::size_t bytes);
  std::size_t capacity() const { return capacity_; }

 private:
  unsigned char* data_ = nullptr;
  std::size_t capacity_ = 0;
};

class StagedOperations : public DeviceOperations, public HostStaging {
 public:
  // `backend_name`: the CPU backend the executor stages for (for messages).
  // `timeline` may be null.
  StagedOperations(const std::string& backend_name, Timeline* timeline);
  ~StagedOperations() override;

  const char* name() const override { return name_.c_str(); }
  std::shared_ptr<void> record_ready(const TensorView& tensor) override;
  HostStaging* staging() override { return this; }
  void allreduce(const std::vector<const TensorEntry*>& group, int set_size) override;
  void broadcast(const TensorEntry& entry) override;

  std::vector<TensorView> stage_in(const std::vector<const TensorEntry*>& group) override;
  void finish_in_place(const std::vector<const TensorEntry*>& group,
                       const std::vector<TensorView>& staged) override;
  void finish_with_result(const TensorEntry& entry, const Tensor& result,
                          std::vector<std::int64_t> received_splits) override;

 private:
  // The staging stream and the poller on the first CUDA tensor's device;
  // one device per rank (several ranks may share it).
  void ensure(int device);

  std::string name_;
  Timeline* timeline_;
  std::shared_ptr<CudaEvents> events_ = std::make_shared<CudaEvents>();
  int device_ = -1;
  void* stream_ = nullptr;  // cudaStream_t, non-blocking
  PinnedBuffer inputs_;     // stage_in's copies (and allreduce results)
  PinnedBuffer results_;    // finish_with_result's source
  std::unique_ptr<CompletionPoller> poller_;
};

}  // namespace hvd
