// CudaEvents with the CompletionPoller on a real device: completion is seen
// by the poller's thread only after the stream's work, and a stream made to
// wait on an event runs after it without the host waiting.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/device/completion_poller.h"
#include "gpu_test_util.h"

namespace hvd {
namespace {

using test::DeviceBuffer;

class CudaEventsTest : public test::GpuTest {};

TEST_F(CudaEventsTest, PollerCompletesAfterTheStreamsWork) {
  auto events = std::make_shared<CudaEvents>();
  cudaStream_t stream;
  HVD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  constexpr std::size_t kBytes = 256u << 20;
  DeviceBuffer<unsigned char> buffer(kBytes);
  std::atomic<bool> done{false};
  {
    CompletionPoller poller(*events);
    for (int i = 0; i < 20; ++i) HVD_CUDA_CHECK(cudaMemsetAsync(buffer.get(), i, kBytes, stream));
    poller.watch(record_shared(events, 0, stream), [&](std::exception_ptr error) {
      EXPECT_FALSE(error);
      EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess);  // the work is done by now
      done = true;
    });
    for (int i = 0; i < 20000 && !done; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(buffer.to_host()[kBytes - 1], 19);
  cudaStreamDestroy(stream);
}

// The poller's thread makes the events' GPU current (the last one here, so
// with several GPUs it is not the default 0) before its CUDA calls.
TEST_F(CudaEventsTest, PollerThreadRunsOnTheEventsDevice) {
  int devices = 0;
  HVD_CUDA_CHECK(cudaGetDeviceCount(&devices));
  const int device = devices - 1;
  HVD_CUDA_CHECK(cudaSetDevice(device));
  cudaStream_t stream;
  HVD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto events = std::make_shared<CudaEvents>();
  std::atomic<int> seen{-1};
  {
    CompletionPoller poller(*events);
    poller.watch(record_shared(events, device, stream), [&](std::exception_ptr) {
      int current = -1;
      cudaGetDevice(&current);
      seen = current;
    });
    for (int i = 0; i < 20000 && seen < 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  EXPECT_EQ(seen, device);
  cudaStreamDestroy(stream);
}

TEST_F(CudaEventsTest, StreamWaitOrdersAnotherStream) {
  CudaEvents events;
  cudaStream_t producer, consumer;
  HVD_CUDA_CHECK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  HVD_CUDA_CHECK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  constexpr std::size_t kBytes = 64u << 20;
  DeviceBuffer<unsigned char> a(kBytes), b(kBytes);
  for (int i = 0; i < 10; ++i) HVD_CUDA_CHECK(cudaMemsetAsync(a.get(), 40 + i, kBytes, producer));
  GpuEvents::Event ready = events.record(0, producer);
  events.stream_wait(0, consumer, ready);
  HVD_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), kBytes, cudaMemcpyDeviceToDevice, consumer));
  HVD_CUDA_CHECK(cudaStreamSynchronize(consumer));
  EXPECT_EQ(b.to_host()[kBytes / 2], 49);
  events.release(ready);
  cudaStreamDestroy(producer);
  cudaStreamDestroy(consumer);
}

}  // namespace
}  // namespace hvd
