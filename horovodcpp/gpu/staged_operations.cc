#include "gpu/staged_operations.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "core/device/device_completion.h"
#include "core/execution/timeline_span.h"
#include "gpu/cuda_check.h"
#include "gpu/device_scope.h"
#include "gpu/device_tensor.h"

namespace hvd {
namespace {

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace

PinnedBuffer::~PinnedBuffer() {
  if (data_) cudaFreeHost(data_);
}

unsigned char* PinnedBuffer::reserve(std::size_t bytes) {
  if (bytes <= capacity_) return data_;
  const std::size_t capacity = grown_capacity(capacity_, bytes);
  unsigned char* old = data_;
  data_ = nullptr;
  capacity_ = 0;
  if (old) cudaFreeHost(old);
  void* memory = nullptr;
  HVD_CUDA_CHECK(cudaMallocHost(&memory, capacity));
  data_ = static_cast<unsigned char*>(memory);
  capacity_ = capacity;
  return data_;
}

StagedOperations::StagedOperations(const std::string& backend_name, Timeline* timeline)
    : name_(backend_name + " (staged through host memory)"), timeline_(timeline) {}

StagedOperations::~StagedOperations() {
  if (stream_) {
    // Copies still queued read or write the pinned buffers and the callers'
    // tensors: let them finish before anything is freed.
    cudaSetDevice(device_);
    cudaStreamSynchronize(as_stream(stream_));
    // Every event has happened now: let the poller complete those Works
    // (briefly; what is left is failed with "shut down" below).
    for (int i = 0; i < 1000 && poller_ && poller_->pending() > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  poller_.reset();
  if (stream_) cudaStreamDestroy(as_stream(stream_));
}

std::shared_ptr<void> StagedOperations::record_ready(const TensorView& tensor) {
  // No device at all: nothing to order against; the collective fails alike
  // on every rank when it runs.
  if (cuda_device_count() == 0) return nullptr;
  return record_shared(events_, tensor.device.index, tensor.stream);
}

void StagedOperations::allreduce(const std::vector<const TensorEntry*>&, int) {
  HVD_THROW(Error, name_ << ": allreduce runs on the CPU backend (staging())");
}

void StagedOperations::broadcast(const TensorEntry&) {
  HVD_THROW(Error, name_ << ": broadcast runs on the CPU backend (staging())");
}

void StagedOperations::ensure(int device) {
  if (stream_) {
    HVD_CHECK_EQ(device, device_, InvalidArgument,
                 "CUDA tensors of one rank must all be on the same GPU (several ranks may "
                 "share one)");
    set_cuda_device(device_);
    return;
  }
  set_cuda_device(device);
  cudaStream_t stream = nullptr;
  HVD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_ = stream;
  device_ = device;
  poller_ = std::make_unique<CompletionPoller>(*events_);
}

std::vector<TensorView> StagedOperations::stage_in(const std::vector<const TensorEntry*>& group) {
  const KeepCurrentDevice keep;  // queued from the caller's thread too
  ensure(group.front()->request.device.index);
  const TimelineSpan span(timeline_, "MEMCPY_IN_HOST_BUFFER", group);
  cudaStream_t stream = as_stream(stream_);
  std::vector<std::size_t> bytes;
  // One GPU: the executor checked the group's tensors share one, ensure()
  // that it is this rank's.
  for (const TensorEntry* entry : group) bytes.push_back(entry->input.size_bytes());
  const StagingPlan plan = plan_staging(bytes);
  // The previous collective's copies out of inputs_ may still be queued:
  // they must be done before the memory is given back.
  if (plan.total > inputs_.capacity()) HVD_CUDA_CHECK(cudaStreamSynchronize(stream));
  unsigned char* host = inputs_.reserve(plan.total);
  std::vector<TensorView> staged;
  staged.reserve(group.size());
  for (std::size_t i = 0; i < group.size(); ++i) {
    const TensorEntry& entry = *group[i];
    // After the tensor's producer (its ready event); after the previous
    // collective's copies back (same stream), so their source is not
    // overwritten early.
    if (entry.ready_event) events_->stream_wait(device_, stream_, entry.ready_event.get());
    if (bytes[i] > 0) {
      HVD_CUDA_CHECK(cudaMemcpyAsync(host + plan.offsets[i], entry.input.data, bytes[i],
                                     cudaMemcpyDeviceToHost, stream));
    }
    staged.emplace_back(host + plan.offsets[i], entry.input.dtype, entry.input.shape);
  }
  // The one wait on the GPU: the CPU backend needs the data. Every earlier
  // copy on the stream has finished too, so both pinned buffers are free.
  HVD_CUDA_CHECK(cudaStreamSynchronize(stream));
  span.end();
  return staged;
}

void StagedOperations::finish_in_place(const std::vector<const TensorEntry*>& group,
                                       const std::vector<TensorView>& staged) {
  const KeepCurrentDevice keep;  // queued from the caller's thread too
  set_cuda_device(device_);
  TimelineSpan span(timeline_, "MEMCPY_OUT_HOST_BUFFER", group);
  for (std::size_t i = 0; i < group.size(); ++i) {
    const std::size_t bytes = staged[i].size_bytes();
    if (bytes == 0) continue;
    // inputs_ is only rewritten after the next stage_in's wait on this stream.
    HVD_CUDA_CHECK(cudaMemcpyAsync(group[i]->output.data, staged[i].data, bytes,
                                   cudaMemcpyHostToDevice, as_stream(stream_)));
  }
  complete_on_stream(events_, *poller_, device_, stream_, group, std::move(span));
}

void StagedOperations::finish_with_result(const TensorEntry& entry, const Tensor& result,
                                          std::vector<std::int64_t> received_splits) {
  const KeepCurrentDevice keep;  // queued from the caller's thread too
  set_cuda_device(device_);
  TimelineSpan span(timeline_, "MEMCPY_OUT_HOST_BUFFER", entry);
  const std::size_t bytes = result.size_bytes();
  // stage_in waited for every earlier copy, so results_ is not in use.
  unsigned char* host = results_.reserve(bytes);
  if (bytes > 0) std::memcpy(host, result.data(), bytes);
  Tensor output = device_tensor(device_, result.dtype(), result.shape());
  if (bytes > 0) {
    HVD_CUDA_CHECK(
        cudaMemcpyAsync(output.data(), host, bytes, cudaMemcpyHostToDevice, as_stream(stream_)));
  }
  complete_on_stream(events_, *poller_, device_, stream_, {&entry}, std::move(span), output,
                     std::move(received_splits));
}

}  // namespace hvd
