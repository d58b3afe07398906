#include "gpu/cuda_events.h"

#include "gpu/cuda_check.h"
#include "gpu/device_scope.h"

namespace hvd {
namespace {

cudaEvent_t as_event(GpuEvents::Event event) { return static_cast<cudaEvent_t>(event); }
cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace

CudaEvents::~CudaEvents() {
  for (const Pooled& pooled : pool_) cudaEventDestroy(as_event(pooled.event));
}

GpuEvents::Event CudaEvents::record(int device, void* stream) {
  DeviceScope scope(device);  // an event belongs to the current device
  device_ = device;
  cudaEvent_t event = nullptr;
  {
    // One per tensor and collective: reused rather than created each time.
    std::lock_guard<std::mutex> lock(pool_mutex_);
    for (std::size_t i = pool_.size(); i-- > 0;) {
      if (pool_[i].device == device) {
        event = as_event(pool_[i].event);
        pool_[i] = pool_.back();
        pool_.pop_back();
        break;
      }
    }
  }
  if (event == nullptr) HVD_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  const cudaError_t status = cudaEventRecord(event, as_stream(stream));
  if (status != cudaSuccess) cudaEventDestroy(event);
  HVD_CUDA_CHECK(status);
  std::lock_guard<std::mutex> lock(pool_mutex_);
  device_of_[event] = device;
  return event;
}

bool CudaEvents::done(Event event) {
  // A thread that never set its device runs on GPU 0: every rank of a
  // multi-GPU host would create a context (and take memory) there. Asked
  // each time (cheap): a callback on this thread may have switched it.
  const int device = device_;
  int current = -1;
  if (device >= 0 && (cudaGetDevice(&current) != cudaSuccess || current != device)) {
    set_cuda_device(device);
  }
  const cudaError_t status = cudaEventQuery(as_event(event));
  if (status == cudaErrorNotReady) return false;
  HVD_CUDA_CHECK(status);
  return true;
}

void CudaEvents::stream_wait(int device, void* stream, Event event) {
  DeviceScope scope(device);
  HVD_CUDA_CHECK(cudaStreamWaitEvent(as_stream(stream), as_event(event), 0));
}

void CudaEvents::release(Event event) {
  // Recording an event again is allowed at any time: work waiting for its
  // earlier record is not affected.
  std::lock_guard<std::mutex> lock(pool_mutex_);
  const auto it = device_of_.find(event);
  if (it == device_of_.end() || pool_.size() >= kMaxPooled) {
    if (it != device_of_.end()) device_of_.erase(it);
    cudaEventDestroy(as_event(event));
    return;
  }
  pool_.push_back({event, it->second});
  device_of_.erase(it);
}

int cuda_device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // clear the "no driver" error
      return 0;
    }
    return n;
  }();
  return count;
}

}  // namespace hvd
