// CUDA tensors through the whole stack (hvd::init, negotiation, fusion,
// NCCL). Inputs are written on the caller's stream behind a long queue of
// other work, so results are only right if the collective waited for the
// tensor's ready event. Ranks: one GPU each (local rank modulo the visible
// devices).
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <vector>

#include "gpu_test_util.h"
#include "horovodcpp/horovodcpp.h"

namespace hvd {
namespace {

using test::DeviceBuffer;

class GpuCollectivesTest : public test::GpuTest {
 protected:
  static void SetUpTestSuite() {
    if (test::no_device_reason().empty()) hvd::init();
  }
  static void TearDownTestSuite() {
    if (hvd::is_initialized()) hvd::shutdown();
  }
  void SetUp() override {
    test::GpuTest::SetUp();
    if (IsSkipped()) return;
    int devices = 0;
    HVD_CUDA_CHECK(cudaGetDeviceCount(&devices));
    device_ = hvd::local_rank() % devices;
    HVD_CUDA_CHECK(cudaSetDevice(device_));
    HVD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    scratch_ = std::make_unique<DeviceBuffer<unsigned char>>(kScratch);
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  TensorView on_device(float* data, std::int64_t n) {
    TensorView view(data, DataType::kFloat32, {n}, Device::cuda(device_));
    view.stream = stream_;
    return view;
  }
  // Copies device data to the host on the caller's stream.
  std::vector<float> read_on_stream(const float* data, std::size_t n) {
    std::vector<float> host(n);
    HVD_CUDA_CHECK(cudaMemcpyAsync(host.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost,
                                   stream_));
    HVD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return host;
  }
  // Fills on the stream after ~1 GB of memsets: the collective must wait
  // for it (its ready event), not run on what was there before.
  void fill_on_stream(float* data, const std::vector<float>& values) {
    for (int i = 0; i < 4; ++i) HVD_CUDA_CHECK(cudaMemsetAsync(scratch_->get(), i, kScratch, stream_));
    HVD_CUDA_CHECK(cudaMemsetAsync(data, 0xff, values.size() * sizeof(float), stream_));  // NaN
    staged_.push_back(values);  // the async copy reads it later
    HVD_CUDA_CHECK(cudaMemcpyAsync(data, staged_.back().data(), values.size() * sizeof(float),
                                   cudaMemcpyHostToDevice, stream_));
  }

  static constexpr std::size_t kScratch = 256u << 20;
  std::unique_ptr<DeviceBuffer<unsigned char>> scratch_;  // allocated in SetUp
  std::deque<std::vector<float>> staged_;

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
};

TEST_F(GpuCollectivesTest, AllreduceWaitsForTheProducingStream) {
  const std::size_t n = 1 << 22;
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = float(i % 1000) + hvd::rank();
  DeviceBuffer<float> d(n);
  fill_on_stream(d.get(), values);
  Work work = allreduce_async(on_device(d.get(), n), "gpu.sum", ReduceOp::kSum);
  work.wait();
  const std::vector<float> got = read_on_stream(d.get(), n);
  const int size = hvd::size();
  for (std::size_t i : {std::size_t(0), std::size_t(12345), n - 1}) {
    EXPECT_EQ(got[i], float(i % 1000) * size + size * (size - 1) / 2.0f) << i;
  }
}

TEST_F(GpuCollectivesTest, FusedGroupWithAverageAndScaleFactors) {
  constexpr int kTensors = 20;
  std::vector<std::unique_ptr<DeviceBuffer<float>>> buffers;
  std::vector<TensorView> views;
  for (int t = 0; t < kTensors; ++t) {
    const std::size_t n = 100 + 37 * t;
    buffers.push_back(std::make_unique<DeviceBuffer<float>>(n));
    fill_on_stream(buffers.back()->get(), std::vector<float>(n, float(t)));
    views.push_back(on_device(buffers.back()->get(), n));
  }
  std::vector<Work> works = grouped_allreduce_async(views, "gpu.group", ReduceOp::kAverage,
                                                    /*prescale=*/2.0, /*postscale=*/0.25);
  for (Work& w : works) w.wait();
  for (int t = 0; t < kTensors; ++t) {
    const std::vector<float> got = read_on_stream(buffers[t]->get(), 100 + 37 * t);
    EXPECT_EQ(got.front(), t * 0.5f) << t;
    EXPECT_EQ(got.back(), t * 0.5f) << t;
  }
}

TEST_F(GpuCollectivesTest, OutOfPlaceAllreduceAndBroadcast) {
  const std::size_t n = 1000;
  DeviceBuffer<float> in(n), out(n), params(n);
  fill_on_stream(in.get(), std::vector<float>(n, 3.0f));
  fill_on_stream(params.get(), std::vector<float>(n, float(hvd::rank() + 7)));
  Work a = allreduce_async(on_device(in.get(), n), on_device(out.get(), n), "gpu.out",
                           ReduceOp::kMax);
  Work b = broadcast_async(on_device(params.get(), n), /*root_rank=*/hvd::size() - 1, "gpu.bcast");
  a.wait();
  b.wait();
  EXPECT_EQ(read_on_stream(out.get(), n)[999], 3.0f);
  EXPECT_EQ(read_on_stream(params.get(), n)[0], float(hvd::size() - 1 + 7));
  EXPECT_EQ(read_on_stream(in.get(), n)[0], 3.0f);  // the input is untouched
}

TEST_F(GpuCollectivesTest, UnsupportedOpsFailClearly) {
  DeviceBuffer<float> d(std::size_t(8));
  try {
    allgather(on_device(d.get(), 8), "gpu.gather");
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("not supported yet for CUDA tensors"), std::string::npos)
        << e.what();
  }
  DeviceBuffer<std::int16_t> s(std::size_t(8));
  TensorView v(s.get(), DataType::kInt16, {8}, Device::cuda(device_));
  v.stream = stream_;
  EXPECT_THROW(allreduce(v, "gpu.int16", ReduceOp::kSum), InvalidArgument);
}

}  // namespace
}  // namespace hvd
