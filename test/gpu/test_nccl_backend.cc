// NcclBackend and NcclCommunicator. One rank per GPU, ranks as threads of
// this process: every collective at one rank (any machine with a GPU), at
// two ranks where two GPUs are visible, and the abort of a communicator
// whose peer never joins.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>

#include "backend/nccl/nccl_backend.h"
#include "gpu_test_util.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

using test::DeviceBuffer;

// A Controller for ranks that are threads: only broadcast_from_root (what
// NcclCommunicator uses) is implemented.
class ThreadController : public Controller {
 public:
  struct Shared {
    std::mutex mutex;
    std::condition_variable cv;
    std::string value;
    bool set = false;
  };
  ThreadController(int rank, int size, std::shared_ptr<Shared> shared)
      : shared_(std::move(shared)) {
    topology_.rank = rank;
    topology_.size = size;
  }
  const Topology& topology() const override { return topology_; }
  std::vector<std::string> gather_to_root(const std::string&) override { throw Error("unused"); }
  void bitwise_and(std::vector<std::uint64_t>&) override { throw Error("unused"); }
  std::string broadcast_from_root(const std::string& message) override {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    if (topology_.rank == 0) {
      shared_->value = message;
      shared_->set = true;
      shared_->cv.notify_all();
    }
    shared_->cv.wait(lock, [&] { return shared_->set; });
    return shared_->value;
  }

 private:
  Topology topology_;
  std::shared_ptr<Shared> shared_;
};

class NcclTest : public test::GpuTest {
 protected:
  // Runs body(rank, backend) on `ranks` threads, rank r on GPU r.
  void run_ranks(int ranks, const std::function<void(int, NcclBackend&)>& body,
                 std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    int devices = 0;
    HVD_CUDA_CHECK(cudaGetDeviceCount(&devices));
    if (devices < ranks) {
      GTEST_SKIP() << "needs " << ranks << " CUDA devices (NCCL runs one rank per GPU); " << devices
                   << " visible";
    }
    auto shared = std::make_shared<ThreadController::Shared>();
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        try {
          HVD_CUDA_CHECK(cudaSetDevice(r));
          ThreadController controller(r, ranks, shared);
          NcclBackend backend(std::make_shared<NcclCommunicator>(controller, r, timeout));
          body(r, backend);
        } catch (const std::exception& e) {
          ADD_FAILURE() << "rank " << r << ": " << e.what();
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
};

// Every collective, checked against what `ranks` ranks must produce.
void every_collective(int rank, int ranks, NcclBackend& backend) {
  const std::size_t n = 1000;
  // allreduce Sum, float32: sum over ranks of (rank + 1) * i.
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = float((rank + 1) * i);
  DeviceBuffer<float> d(x);
  backend.allreduce(d.get(), n, DataType::kFloat32, ReduceOp::kSum);
  backend.communicator().synchronize();
  const float factor = ranks * (ranks + 1) / 2.0f;
  EXPECT_EQ(d.to_host()[10], 10 * factor);
  // allreduce Max, int64; Product, bool (AND).
  DeviceBuffer<std::int64_t> m(std::vector<std::int64_t>(n, rank));
  backend.allreduce(m.get(), n, DataType::kInt64, ReduceOp::kMax);
  std::vector<std::uint8_t> flags(n, rank == 0 ? 1 : 0);
  DeviceBuffer<std::uint8_t> b(flags);
  backend.allreduce(b.get(), n, DataType::kBool, ReduceOp::kProduct);
  backend.communicator().synchronize();
  EXPECT_EQ(m.to_host()[5], ranks - 1);
  EXPECT_EQ(b.to_host()[5], ranks == 1 ? 1 : 0);
  // float16 / bfloat16 sums.
  for (DataType half : {DataType::kFloat16, DataType::kBFloat16}) {
    std::vector<std::uint16_t> bits(
        n, half == DataType::kFloat16 ? float16_t(1.5f).bits : bfloat16_t(1.5f).bits);
    DeviceBuffer<std::uint16_t> h(bits);
    backend.allreduce(h.get(), n, half, ReduceOp::kSum);
    backend.communicator().synchronize();
    const std::uint16_t got = h.to_host()[3];
    float16_t f16;
    bfloat16_t bf16;
    f16.bits = bf16.bits = got;
    const float value = half == DataType::kFloat16 ? float(f16) : float(bf16);
    EXPECT_EQ(value, 1.5f * ranks) << dtype_name(half);
  }
  // broadcast from the last rank; int16 moves as bytes.
  DeviceBuffer<std::int16_t> s(std::vector<std::int16_t>(n, std::int16_t(rank * 100 + 7)));
  backend.broadcast(s.get(), n, DataType::kInt16, ranks - 1);
  backend.communicator().synchronize();
  EXPECT_EQ(s.to_host()[999], (ranks - 1) * 100 + 7);
  // ragged allgatherv: rank r gives r + 2 elements.
  std::vector<std::size_t> counts;
  std::size_t total = 0;
  for (int r = 0; r < ranks; ++r) total += counts.emplace_back(r + 2);
  DeviceBuffer<std::int32_t> in(std::vector<std::int32_t>(rank + 2, rank));
  DeviceBuffer<std::int32_t> gathered(total);
  backend.allgatherv(in.get(), gathered.get(), counts, DataType::kInt32);
  // alltoallv: rank r sends j + 1 elements (value 10 r + j) to rank j.
  std::vector<std::size_t> send(ranks), recv(ranks);
  std::vector<double> to_send;
  for (int j = 0; j < ranks; ++j) {
    send[j] = j + 1;
    recv[j] = rank + 1;
    to_send.insert(to_send.end(), j + 1, 10.0 * rank + j);
  }
  DeviceBuffer<double> a_in(to_send), a_out(std::size_t(ranks) * (rank + 1));
  backend.alltoallv(a_in.get(), send, a_out.get(), recv, DataType::kFloat64);
  // uneven reducescatter Sum: shares of 3, 2, ... elements of ones.
  std::vector<std::size_t> shares;
  std::size_t rs_total = 0;
  for (int r = 0; r < ranks; ++r) rs_total += shares.emplace_back(3 - (r > 0));
  DeviceBuffer<float> rs_in(std::vector<float>(rs_total, 1.0f)), rs_out(shares[rank]);
  backend.reducescatter(rs_in.get(), rs_out.get(), shares, DataType::kFloat32, ReduceOp::kSum);
  backend.communicator().synchronize();
  const std::vector<std::int32_t> g = gathered.to_host();
  EXPECT_EQ(g.front(), 0);
  EXPECT_EQ(g.back(), ranks - 1);
  const std::vector<double> got = a_out.to_host();
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(got[r * (rank + 1)], 10.0 * r + rank);
  EXPECT_EQ(rs_out.to_host(), std::vector<float>(shares[rank], float(ranks)));
}

TEST_F(NcclTest, EveryCollectiveAtOneRank) {
  run_ranks(1, [](int rank, NcclBackend& backend) { every_collective(rank, 1, backend); });
}

TEST_F(NcclTest, EveryCollectiveAtTwoRanks) {
  run_ranks(2, [](int rank, NcclBackend& backend) { every_collective(rank, 2, backend); });
}

TEST_F(NcclTest, Int16ReductionIsRefusedClearly) {
  run_ranks(1, [](int, NcclBackend& backend) {
    DeviceBuffer<std::int16_t> s(std::size_t(4));
    try {
      backend.allreduce(s.get(), 4, DataType::kInt16, ReduceOp::kSum);
      FAIL() << "no error";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("no 16-bit integer type"), std::string::npos);
    }
  });
}

// Rank 1 never calls the allreduce (but keeps its communicator until rank
// 0 is done, so NCCL sees no closed connection): rank 0's synchronize must
// give up within the timeout, abort the communicator and fail every later
// call.
TEST_F(NcclTest, MissingPeerTimesOutAndAborts) {
  std::atomic<bool> rank0_done{false};
  run_ranks(
      2,
      [&rank0_done](int rank, NcclBackend& backend) {
        if (rank == 1) {
          for (int i = 0; i < 6000 && !rank0_done; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          return;
        }
        struct SetOnExit {
          std::atomic<bool>& flag;
          ~SetOnExit() { flag = true; }
        } done{rank0_done};
        DeviceBuffer<float> d(std::size_t(1024));
        backend.allreduce(d.get(), 1024, DataType::kFloat32, ReduceOp::kSum);
        const auto start = std::chrono::steady_clock::now();
        EXPECT_THROW(backend.communicator().synchronize(), Timeout);
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
        EXPECT_THROW(backend.allreduce(d.get(), 1024, DataType::kFloat32, ReduceOp::kSum),
                     BackendError);
      },
      std::chrono::seconds(10));
}

}  // namespace
}  // namespace hvd
