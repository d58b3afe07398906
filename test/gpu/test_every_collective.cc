// Every collective on CUDA tensors through hvd::init: allreduce with every
// op and float16/bfloat16/int64 (and int16, staged only), fused groups
// with scale factors, broadcast, allgather with per-rank sizes, alltoall
// with splits, reducescatter, allreduces with joined ranks (2+ ranks);
// results the library allocates are on the tensor's GPU. Inputs are
// written on the caller's stream behind a long queue of other work, so
// results are only right if the collective waited for the tensor's ready
// event. Built twice: gpu_collective_tests (NCCL, one GPU per rank) and
// gpu_staged_tests (HVD_TEST_GPU_OPERATIONS=gloo unless
// HOROVODCPP_GPU_OPERATIONS is set: staged through pinned host memory,
// run under hvdrun with 1 to 4 ranks that may all share one GPU). Rank 0's
// timeline shows a CUDA allreduce.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../harness/timeline_file.h"
#include "gpu_test_util.h"
#include "horovodcpp/horovodcpp.h"

namespace hvd {
namespace {

using test::DeviceBuffer;

class EveryCollectiveTest : public test::GpuTest {
 protected:
  static void SetUpTestSuite() {
    if (!test::no_device_reason().empty()) return;
#ifdef HVD_TEST_GPU_OPERATIONS
    setenv("HOROVODCPP_GPU_OPERATIONS", HVD_TEST_GPU_OPERATIONS, /*overwrite=*/0);
#endif
    hvd::init();
  }
  static void TearDownTestSuite() {
    if (hvd::is_initialized()) hvd::shutdown();
  }
  void SetUp() override {
    test::GpuTest::SetUp();
    if (IsSkipped()) return;
    int devices = 0;
    HVD_CUDA_CHECK(cudaGetDeviceCount(&devices));
    // With one GPU, every rank shares it. Hosts simulated on one machine
    // (hvdrun -H 127.0.0.1:2,127.0.0.2:2) repeat local ranks: spread by
    // global rank there, so the job-wide NCCL communicator has one GPU per rank.
    const bool one_host = hvd::local_size() == hvd::size();
    device_ = (one_host ? hvd::local_rank() : hvd::rank()) % devices;
    HVD_CUDA_CHECK(cudaSetDevice(device_));
    HVD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    scratch_ = std::make_unique<DeviceBuffer<unsigned char>>(kScratch);
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  // Staged through host memory (gloo, mpi) rather than on NCCL.
  static bool staged() {
    const char* ops = std::getenv("HOROVODCPP_GPU_OPERATIONS");
    return ops != nullptr && std::string(ops) != "nccl";
  }

  // Device memory filled with `values` on the caller's stream, after ~256
  // MB of memsets: the staging must wait for it.
  template <typename T>
  std::unique_ptr<DeviceBuffer<T>> on_stream(const std::vector<T>& values) {
    auto buffer = std::make_unique<DeviceBuffer<T>>(values.size());
    for (int i = 0; i < 4; ++i) {
      HVD_CUDA_CHECK(cudaMemsetAsync(scratch_->get(), i, kScratch / 4, stream_));
    }
    const std::size_t bytes = values.size() * sizeof(T);
    HVD_CUDA_CHECK(cudaMemsetAsync(buffer->get(), 0xff, bytes, stream_));
    sources_.emplace_back(bytes);  // the async copy reads it later
    std::memcpy(sources_.back().data(), values.data(), bytes);
    HVD_CUDA_CHECK(cudaMemcpyAsync(buffer->get(), sources_.back().data(), bytes,
                                   cudaMemcpyHostToDevice, stream_));
    return buffer;
  }
  template <typename T>
  TensorView view_of(T* data, std::vector<std::int64_t> shape) {
    TensorView view(data, dtype_of<T>(), std::move(shape), Device::cuda(device_));
    view.stream = stream_;
    return view;
  }
  // Read on the caller's stream: ordered after the collective's copies.
  template <typename T>
  std::vector<T> read(const T* data, std::size_t n) {
    std::vector<T> host(n);
    HVD_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), data, n * sizeof(T), cudaMemcpyDeviceToHost, stream_));
    HVD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return host;
  }
  // A library-allocated result: on this rank's GPU.
  template <typename T>
  std::vector<T> read_output(const Work& work) {
    const Tensor& out = work.output();
    EXPECT_EQ(out.device(), Device::cuda(device_));
    return read(static_cast<const T*>(out.data()), static_cast<std::size_t>(out.num_elements()));
  }

  static constexpr std::size_t kScratch = 256u << 20;
  std::unique_ptr<DeviceBuffer<unsigned char>> scratch_;
  std::deque<std::vector<unsigned char>> sources_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
};

TEST_F(EveryCollectiveTest, AllreduceEveryOp) {
  const int size = hvd::size(), rank = hvd::rank();
  const std::size_t n = 1 << 20;
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = float(i % 5) + rank + 1;
  struct Case {
    ReduceOp op;
    const char* name;
  };
  for (Case c :
       {Case{ReduceOp::kSum, "sum"}, Case{ReduceOp::kAverage, "avg"}, Case{ReduceOp::kMin, "min"},
        Case{ReduceOp::kMax, "max"}, Case{ReduceOp::kProduct, "prod"}}) {
    auto in = on_stream(values);
    DeviceBuffer<float> out(n);
    allreduce_async(view_of(in->get(), {std::int64_t(n)}), view_of(out.get(), {std::int64_t(n)}),
                    std::string("every.") + c.name, c.op)
        .wait();
    const std::vector<float> got = read(out.get(), n);
    for (std::size_t i : {std::size_t(0), std::size_t(3), n - 1}) {
      const float base = float(i % 5) + 1;
      float want = 0;
      switch (c.op) {
        case ReduceOp::kSum: want = base * size + size * (size - 1) / 2.0f; break;
        case ReduceOp::kAverage: want = base + (size - 1) / 2.0f; break;
        case ReduceOp::kMin: want = base; break;
        case ReduceOp::kMax: want = base + size - 1; break;
        case ReduceOp::kProduct:
          want = 1;
          for (int r = 0; r < size; ++r) want *= base + r;
          break;
      }
      EXPECT_FLOAT_EQ(got[i], want) << c.name << " " << i;
    }
    EXPECT_EQ(read(in->get(), 1)[0], values[0]);  // out of place: input untouched
  }
}

// Sizes that no number of local ranks divides, alone and fused: every
// element of every rank's result (the hierarchical allreduce pads the
// fused buffer to a multiple of the local size and splits it in shards).
TEST_F(EveryCollectiveTest, AllreduceOddSizesEveryElement) {
  const int size = hvd::size(), rank = hvd::rank();
  const std::vector<std::int64_t> sizes = {1, 3, 7, 1001, 65537};
  std::vector<std::unique_ptr<DeviceBuffer<std::int32_t>>> buffers;
  std::vector<TensorView> views;
  for (std::int64_t n : sizes) {
    std::vector<std::int32_t> values(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) values[i] = std::int32_t(i % 997) * (rank + 1);
    buffers.push_back(on_stream(values));
    views.push_back(view_of(buffers.back()->get(), {n}));
  }
  // One at a time (each alone in its buffer), then all fused, then Max.
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    allreduce_async(views[t], "every.odd." + std::to_string(t), ReduceOp::kSum).wait();
  }
  std::vector<Work> works = grouped_allreduce_async(views, "every.odd.group", ReduceOp::kSum);
  for (Work& w : works) w.wait();
  const std::int64_t ranks_sum = std::int64_t(size) * (size + 1) / 2;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    const std::vector<std::int32_t> got = read(buffers[t]->get(), std::size_t(sizes[t]));
    std::size_t wrong = 0;
    for (std::int64_t i = 0; i < sizes[t]; ++i) {
      // Summed twice: (i % 997) * ranks_sum, then that times size.
      const std::int64_t want = std::int64_t(i % 997) * ranks_sum * size;
      if (got[std::size_t(i)] != want && wrong++ < 3) {
        ADD_FAILURE() << "rank " << rank << " tensor " << sizes[t] << " element " << i << ": "
                      << got[std::size_t(i)] << " != " << want;
      }
    }
    EXPECT_EQ(wrong, 0u) << "rank " << rank << " tensor of " << sizes[t];
  }
  auto m = on_stream(std::vector<std::int32_t>(1001, std::int32_t(rank) * 3 - 7));
  allreduce_async(view_of(m->get(), {1001}), "every.odd.max", ReduceOp::kMax).wait();
  for (std::int32_t v : read(m->get(), 1001)) ASSERT_EQ(v, (size - 1) * 3 - 7) << "rank " << rank;
}

TEST_F(EveryCollectiveTest, HalfPrecisionAndIntegers) {
  const int size = hvd::size(), rank = hvd::rank();
  auto h = on_stream(std::vector<float16_t>(1000, float16_t(rank + 0.5f)));
  auto b = on_stream(std::vector<bfloat16_t>(1000, bfloat16_t(float(rank + 1))));
  auto i = on_stream(std::vector<std::int64_t>(1000, std::int64_t(rank) << 33));
  auto s = on_stream(std::vector<std::int16_t>(10, std::int16_t(rank + 1)));
  Work wh = allreduce_async(view_of(h->get(), {1000}), "every.f16", ReduceOp::kSum);
  Work wb = allreduce_async(view_of(b->get(), {10, 100}), "every.bf16", ReduceOp::kAverage);
  Work wi = allreduce_async(view_of(i->get(), {1000}), "every.i64", ReduceOp::kSum);
  for (Work* w : {&wh, &wb, &wi}) w->wait();
  EXPECT_EQ(float(read(h->get(), 1000)[999]), size * size / 2.0f);
  EXPECT_EQ(float(read(b->get(), 1000)[0]), (size + 1) / 2.0f);
  EXPECT_EQ(read(i->get(), 1000)[500], (std::int64_t(size) * (size - 1) / 2) << 33);
  const TensorView sv = view_of(s->get(), {10});
  if (staged()) {
    allreduce_async(sv, "every.i16", ReduceOp::kMax).wait();
    EXPECT_EQ(read(s->get(), 10)[9], size);
  } else {
    EXPECT_THROW(allreduce_async(sv, "every.i16", ReduceOp::kMax).wait(), InvalidArgument);
  }
}

TEST_F(EveryCollectiveTest, FusedGroupWithScaleFactors) {
  constexpr int kTensors = 20;
  std::vector<std::unique_ptr<DeviceBuffer<float>>> buffers;
  std::vector<TensorView> views;
  for (int t = 0; t < kTensors; ++t) {
    const std::int64_t n = 100 + 37 * t;
    buffers.push_back(on_stream(std::vector<float>(n, float(t))));
    views.push_back(view_of(buffers.back()->get(), {n}));
  }
  std::vector<Work> works = grouped_allreduce_async(views, "every.group", ReduceOp::kAverage,
                                                    /*prescale=*/2.0, /*postscale=*/0.25);
  for (Work& w : works) w.wait();
  for (int t = 0; t < kTensors; ++t) {
    const std::vector<float> got = read(buffers[t]->get(), 100 + 37 * t);
    EXPECT_EQ(got.front(), t * 0.5f) << t;
    EXPECT_EQ(got.back(), t * 0.5f) << t;
  }
}

TEST_F(EveryCollectiveTest, Broadcast) {
  auto d = on_stream(std::vector<double>(5000, hvd::rank() + 7.0));
  broadcast_async(view_of(d->get(), {5000}), /*root_rank=*/hvd::size() - 1, "every.bcast").wait();
  EXPECT_EQ(read(d->get(), 5000)[4999], hvd::size() - 1 + 7.0);
}

TEST_F(EveryCollectiveTest, AllgatherWithPerRankSizes) {
  const int size = hvd::size(), rank = hvd::rank();
  // Rank r: r + 1 rows of 3 values r.
  auto d = on_stream(std::vector<float>(3 * (rank + 1), float(rank)));
  Work w = allgather_async(view_of(d->get(), {rank + 1, 3}), "every.gather");
  w.wait();
  const std::vector<float> got = read_output<float>(w);
  EXPECT_EQ(w.output().shape(), (std::vector<std::int64_t>{size * (size + 1) / 2, 3}));
  std::size_t at = 0;
  for (int r = 0; r < size; ++r) {
    for (int k = 0; k < 3 * (r + 1); ++k, ++at) ASSERT_EQ(got[at], float(r)) << at;
  }
}

TEST_F(EveryCollectiveTest, AlltoallWithSplits) {
  const int size = hvd::size(), rank = hvd::rank();
  // Rank j gets j + 1 rows (of 2 values 100 * sender + j) from every rank.
  std::vector<std::int64_t> splits;
  std::vector<std::int32_t> values;
  for (int j = 0; j < size; ++j) {
    splits.push_back(j + 1);
    values.insert(values.end(), 2 * (j + 1), 100 * rank + j);
  }
  auto d = on_stream(values);
  Work w = alltoall_async(view_of(d->get(), {std::int64_t(values.size() / 2), 2}), splits,
                          "every.alltoall");
  w.wait();
  EXPECT_EQ(w.received_splits(), std::vector<std::int64_t>(size, rank + 1));
  const std::vector<std::int32_t> got = read_output<std::int32_t>(w);
  ASSERT_EQ(got.size(), std::size_t(2 * size * (rank + 1)));
  for (int r = 0; r < size; ++r) EXPECT_EQ(got[2 * r * (rank + 1)], 100 * r + rank) << r;
}

TEST_F(EveryCollectiveTest, ReducescatterAverageAndFloat16) {
  const int size = hvd::size(), rank = hvd::rank();
  const std::int64_t rows = 2 * size + 1;
  std::vector<float> values;
  std::vector<float16_t> halves;
  for (std::int64_t r = 0; r < rows; ++r) {
    values.insert(values.end(), 4, float(r + rank));
    halves.push_back(float16_t(float(r)));
  }
  auto d = on_stream(values);
  auto h = on_stream(halves);
  Work w = reducescatter_async(view_of(d->get(), {rows, 4}), "every.rs", ReduceOp::kAverage);
  Work wh = reducescatter_async(view_of(h->get(), {rows}), "every.rs16", ReduceOp::kSum);
  w.wait();
  wh.wait();
  // This rank's rows start after the earlier ranks' shares (the first rows % size get one more).
  std::int64_t first = 0;
  for (int r = 0; r < rank; ++r) first += rows / size + (r < rows % size ? 1 : 0);
  const std::vector<float> got = read_output<float>(w);
  EXPECT_EQ(w.output().shape()[0], rows / size + (rank < rows % size ? 1 : 0));
  EXPECT_FLOAT_EQ(got[0], first + (size - 1) / 2.0f);
  EXPECT_EQ(float(read_output<float16_t>(wh)[0]), float(first * size));
}

// Rank 0's timeline: the allreduce of a CUDA tensor on its row, on NCCL
// (hierarchical where HOROVODCPP_HIERARCHICAL_ALLREDUCE is on across hosts)
// from its queueing to its completion, or staged: the copies to and from
// host memory around the CPU backend's allreduce.
TEST_F(EveryCollectiveTest, AllreduceOnTheTimeline) {
  const std::string path = test::timeline_path("gpu");  // rank 0's: it alone writes
  hvd::start_timeline(path);
  auto d = on_stream(std::vector<float>(1000, 1.0f));
  Work work = allreduce_async(view_of(d->get(), {1000}), "every.timeline", ReduceOp::kSum);
  work.wait();
  // wait() returned with the allreduce queued on the GPU; its event ends
  // once the GPU has run it, when poll() becomes true.
  for (int i = 0; i < 20000 && !work.poll(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(work.poll());
  hvd::stop_timeline();
  EXPECT_EQ(read(d->get(), 1000)[999], float(hvd::size()));
  if (hvd::rank() != 0) return;
  EXPECT_TRUE(test::valid_json(path)) << test::read_file(path).substr(0, 2000);
  std::vector<std::string> phases;
  for (const test::TracedEvent& e : test::traced_events(path)) {
    if (e.row == "every.timeline" && e.name != "QUEUE" && e.name != "NEGOTIATE") {
      phases.push_back(e.name);
    }
  }
  const char* hierarchical = std::getenv("HOROVODCPP_HIERARCHICAL_ALLREDUCE");
  if (staged()) {
    ASSERT_EQ(phases.size(), 3u) << test::read_file(path);
    EXPECT_EQ(phases[0], "MEMCPY_IN_HOST_BUFFER");
    EXPECT_NE(phases[1].find("_ALLREDUCE"), std::string::npos) << phases[1];
    EXPECT_EQ(phases[2], "MEMCPY_OUT_HOST_BUFFER");
  } else if (hierarchical && std::string(hierarchical) == "1" && hvd::local_size() != hvd::size()) {
    EXPECT_EQ(phases, std::vector<std::string>{"NCCL_HIERARCHICAL_ALLREDUCE"});
  } else {
    EXPECT_EQ(phases, std::vector<std::string>{"NCCL_ALLREDUCE"});
  }
  std::remove(path.c_str());
}

// join(): rank r has 1 + r steps, then joins; at step s the ranks r >= s
// submit. The joined ranks take part with zeros (on the device for NCCL,
// from host memory when staged): Average divides by every rank (as
// Horovod), fused groups (and float16) come out right, and join() returns
// the last rank on every rank.
TEST_F(EveryCollectiveTest, AllreduceWithJoinedRanks) {
  const int size = hvd::size(), rank = hvd::rank();
  if (size < 2) GTEST_SKIP() << "join needs a joined rank and a submitting one (2+ ranks)";
  const std::vector<std::int64_t> sizes = {7, 65537, 3};
  for (int step = 0; step < 1 + rank; ++step) {
    float value_sum = 0;
    int active = 0;
    for (int r = step; r < size; ++r) {
      value_sum += float(r + 1);
      ++active;
    }
    auto avg = on_stream(std::vector<float>(1001, float(rank + 1)));
    auto half = on_stream(std::vector<float16_t>(1000, float16_t(float(rank + 1))));
    std::vector<std::unique_ptr<DeviceBuffer<float>>> buffers;
    std::vector<TensorView> views;
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      buffers.push_back(on_stream(std::vector<float>(std::size_t(sizes[t]), float(rank + t))));
      views.push_back(view_of(buffers.back()->get(), {sizes[t]}));
    }
    const std::string tag = "every.join." + std::to_string(step);
    Work wa = allreduce_async(view_of(avg->get(), {1001}), tag + ".avg", ReduceOp::kAverage);
    Work wh = allreduce_async(view_of(half->get(), {1000}), tag + ".f16", ReduceOp::kSum);
    std::vector<Work> group = grouped_allreduce_async(views, tag + ".group", ReduceOp::kSum);
    wa.wait();
    wh.wait();
    for (Work& w : group) w.wait();
    EXPECT_FLOAT_EQ(read(avg->get(), 1001)[1000], value_sum / size) << "step " << step;
    EXPECT_EQ(float(read(half->get(), 1000)[999]), value_sum) << "step " << step;
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      const std::vector<float> got = read(buffers[t]->get(), std::size_t(sizes[t]));
      // Sum over the submitting ranks r of (r + t).
      const float want = value_sum - active + float(active * t);
      EXPECT_EQ(got.front(), want) << "step " << step << " tensor " << t;
      EXPECT_EQ(got.back(), want) << "step " << step << " tensor " << t;
    }
  }
  EXPECT_EQ(hvd::join(), size - 1);
  // Every rank is back: the next allreduce counts them all.
  auto all = on_stream(std::vector<float>(5, 1.0f));
  allreduce_async(view_of(all->get(), {5}), "every.join.after", ReduceOp::kSum).wait();
  EXPECT_EQ(read(all->get(), 5)[4], float(size));
}

// As for CPU tensors: Max sees a joined rank's zeros; broadcast, which
// needs its data, fails on every rank still submitting.
TEST_F(EveryCollectiveTest, JoinRefusesBroadcastMaxSeesZeros) {
  if (hvd::size() < 2) GTEST_SKIP() << "join needs a joined rank and a submitting one (2+ ranks)";
  if (hvd::rank() != 0) {
    auto d = on_stream(std::vector<float>(8, 1.0f));
    EXPECT_THROW(broadcast_async(view_of(d->get(), {8}), 1, "every.join.bcast").wait(),
                 InvalidArgument);
    auto m = on_stream(std::vector<float>(8, -1.0f));
    allreduce_async(view_of(m->get(), {8}), "every.join.max", ReduceOp::kMax).wait();
    EXPECT_EQ(read(m->get(), 8)[7], 0.0f);
  }
  hvd::join();
}

}  // namespace
}  // namespace hvd
