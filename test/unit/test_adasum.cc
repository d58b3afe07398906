// AdasumReducer on ranks that are threads of this process, exchanging
// through memory: every power-of-two rank count up to 16, tensors of
// awkward sizes alone and fused, against the Adasum recursion in double
// arithmetic computed from every rank's inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "../harness/adasum_reference.h"
#include "core/execution/adasum.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

// Mailboxes between the threads: messages from one rank to another arrive
// in order.
class Mailboxes {
 public:
  void post(int from, int to, std::vector<unsigned char> message) {
    std::lock_guard<std::mutex> lock(mutex_);
    boxes_[{from, to}].push_back(std::move(message));
    arrived_.notify_all();
  }
  std::vector<unsigned char> take(int from, int to) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto& box = boxes_[{from, to}];
    arrived_.wait(lock, [&] { return !box.empty(); });
    std::vector<unsigned char> message = std::move(box.front());
    box.pop_front();
    return message;
  }

 private:
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<std::pair<int, int>, std::deque<std::vector<unsigned char>>> boxes_;
};

// A backend with sendrecv only (all Adasum needs), counting its calls.
class ThreadBackend : public Backend {
 public:
  ThreadBackend(Mailboxes& mailboxes, int rank) : mailboxes_(mailboxes), rank_(rank) {}
  const char* name() const override { return "threads"; }
  BackendCapabilities capabilities() const override { return {}; }
  void allreduce(void*, std::size_t, DataType, ReduceOp) override { unused(); }
  void allgatherv(const void*, void*, const std::vector<std::size_t>&, DataType) override {
    unused();
  }
  void broadcast(void*, std::size_t, DataType, int) override { unused(); }
  void alltoallv(const void*, const std::vector<std::size_t>&, void*,
                 const std::vector<std::size_t>&, DataType) override {
    unused();
  }
  void reducescatter(void*, void*, const std::vector<std::size_t>&, DataType, ReduceOp) override {
    unused();
  }
  void sendrecv(const void* send, std::size_t send_count, void* recv, std::size_t recv_count,
                DataType dtype, int peer) override {
    ++calls;
    const std::size_t element_size = dtype_size(dtype);
    const auto* bytes = static_cast<const unsigned char*>(send);
    mailboxes_.post(rank_, peer,
                    std::vector<unsigned char>(bytes, bytes + send_count * element_size));
    const std::vector<unsigned char> message = mailboxes_.take(peer, rank_);
    ASSERT_EQ(message.size(), recv_count * element_size) << "rank " << rank_ << " from " << peer;
    if (!message.empty()) std::memcpy(recv, message.data(), message.size());
  }
  int calls = 0;

 private:
  [[noreturn]] static void unused() { throw Error("not used by Adasum"); }
  Mailboxes& mailboxes_;
  int rank_;
};

// ---- Inputs: rank r's tensor t. Correlated across ranks (a shared
// direction plus noise), so that coefficients are far from 1, with a scale
// per tensor, so that coefficients over the whole fused buffer instead of
// per tensor would be far off. Tensor `zero_on_rank0` is zero on rank 0.

std::vector<double> input(int rank, std::size_t t, std::size_t count) {
  std::mt19937_64 shared(1000 + t), own(7919 * (rank + 1) + t);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  const double scale = std::pow(10.0, static_cast<double>(t % 3) - 1.0);  // 0.1, 1, 10
  std::vector<double> v(count);
  for (double& x : v) x = scale * (uniform(shared) + 0.5 * (rank + 1) * uniform(own));
  return v;
}

// Ranks 0 .. buffers.size() - 1 as threads, rank r running
// reduce(reducer, buffers[r]) with an AdasumReducer of its own. Returns
// each rank's number of sendrecv calls; rethrows a rank's error.
template <typename T, typename Reduce>
std::vector<int> on_thread_ranks(std::vector<std::vector<T>>& buffers, Reduce&& reduce) {
  const int size = static_cast<int>(buffers.size());
  Mailboxes mailboxes;
  std::vector<int> calls(size);
  std::vector<std::exception_ptr> errors(size);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        ThreadBackend backend(mailboxes, rank);
        AdasumReducer reducer(backend, rank, size);
        reduce(reducer, buffers[rank]);
        calls[rank] = backend.calls;
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int rank = 0; rank < size; ++rank) {
    if (errors[rank]) std::rethrow_exception(errors[rank]);
  }
  return calls;
}

template <typename T>
struct Outcome {
  std::vector<std::vector<T>> results;  // per rank
  std::vector<int> calls;               // sendrecv calls per rank
};

// Every rank reduces its tensors of `counts` in one call (fused) or one
// call per tensor, with inputs rounded to T.
template <typename T>
Outcome<T> run_ranks(int size, const std::vector<std::size_t>& counts, bool fused) {
  Outcome<T> out;
  out.results.resize(size);
  for (int rank = 0; rank < size; ++rank) {
    for (std::size_t t = 0; t < counts.size(); ++t) {
      for (double x : input(rank, t, counts[t])) out.results[rank].push_back(static_cast<T>(x));
    }
  }
  out.calls = on_thread_ranks(out.results, [&](AdasumReducer& reducer, std::vector<T>& buffer) {
    if (fused) return reducer.allreduce(buffer.data(), counts, dtype_of<T>());
    std::size_t offset = 0;
    for (std::size_t count : counts) {
      reducer.allreduce(buffer.data() + offset, {count}, dtype_of<T>());
      offset += count;
    }
  });
  return out;
}

// The results of every rank: the same bits, and within `tolerance` (times
// the tensor's largest magnitude) of the reference of the T-rounded inputs.
template <typename T>
void check(const Outcome<T>& got, int size, const std::vector<std::size_t>& counts,
           double tolerance) {
  for (int rank = 1; rank < size; ++rank) {
    EXPECT_EQ(std::memcmp(got.results[rank].data(), got.results[0].data(),
                          got.results[0].size() * sizeof(T)),
              0)
        << "rank " << rank << " differs from rank 0";
  }
  std::size_t offset = 0;
  for (std::size_t t = 0; t < counts.size(); ++t) {
    std::vector<std::vector<double>> inputs;
    for (int rank = 0; rank < size; ++rank) {
      std::vector<double> v = input(rank, t, counts[t]);
      for (double& x : v) x = static_cast<T>(x);
      inputs.push_back(std::move(v));
    }
    const std::vector<double> want = adasum_reference::adasum(inputs, 0, size);
    double magnitude = 0;
    for (double x : want) magnitude = std::max(magnitude, std::fabs(x));
    for (std::size_t i = 0; i < counts[t]; ++i) {
      const double have = got.results[0][offset + i];
      ASSERT_NEAR(have, want[i], tolerance * magnitude)
          << "tensor " << t << " element " << i << " of " << counts[t] << ", " << size << " ranks";
    }
    offset += counts[t];
  }
}

// Sizes: fewer elements than ranks, odd, empty, larger than one level's
// halves; tensor 1 has a different scale than its neighbours.
const std::vector<std::size_t> kCounts = {1, 3, 0, 37, 1000, 2, 513};

TEST(AdasumReducerTest, FusedAndAloneMatchTheReferenceOnEveryRankCount) {
  for (int size : {1, 2, 4, 8, 16}) {
    SCOPED_TRACE("size " + std::to_string(size));
    for (bool fused : {true, false}) {
      SCOPED_TRACE(fused ? "fused" : "one tensor per call");
      check(run_ranks<double>(size, kCounts, fused), size, kCounts, 1e-13);
      check(run_ranks<float>(size, kCounts, fused), size, kCounts, 1e-5);
    }
  }
}

// Coefficients per tensor: combining two ranks that hold x and 2x gives
// (1 - 2/2) x + (1 - 2/8) 2x = 1.5 x, tensor by tensor, whatever the other
// tensors of the buffer hold.
TEST(AdasumReducerTest, ParallelVectorsGiveTheExpectedCombination) {
  std::vector<std::vector<double>> buffers = {{1, 2, 3, 100, -200}, {2, 4, 6, -7, 1}};
  on_thread_ranks(buffers, [](AdasumReducer& reducer, std::vector<double>& buffer) {
    reducer.allreduce(buffer.data(), {3, 2}, DataType::kFloat64);
  });
  const std::vector<double> second = adasum_reference::combine({100, -200}, {-7, 1});
  const std::vector<double> expected = {1.5, 3, 4.5, second[0], second[1]};
  for (int rank = 0; rank < 2; ++rank) {
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_DOUBLE_EQ(buffers[rank][i], expected[i]) << "rank " << rank << " element " << i;
    }
  }
}

// Orthogonal vectors add up; a zero vector leaves the other unchanged.
TEST(AdasumReducerTest, OrthogonalAddAndZeroKeepsTheOther) {
  std::vector<std::vector<float>> buffers = {{1, 0, 0, 0}, {0, 2, 5, -3}};
  on_thread_ranks(buffers, [](AdasumReducer& reducer, std::vector<float>& buffer) {
    reducer.allreduce(buffer.data(), {2, 2}, DataType::kFloat32);
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(buffers[rank], (std::vector<float>{1, 2, 5, -3})) << "rank " << rank;
  }
}

TEST(AdasumReducerTest, LevelsCostLogarithmicExchanges) {
  // 8 ranks: 3 halvings, 1 + 2 + 3 dot-product exchanges, 3 doublings.
  const Outcome<float> got = run_ranks<float>(8, {100}, true);
  for (int rank = 0; rank < 8; ++rank) EXPECT_EQ(got.calls[rank], 12) << "rank " << rank;
}

TEST(AdasumReducerTest, RejectsBeforeCommunicating) {
  Mailboxes mailboxes;
  ThreadBackend backend(mailboxes, 0);
  std::vector<float> buffer(4, 1.0f);
  // A rank count that is not a power of two, a dtype that is not float32/64.
  EXPECT_THROW(AdasumReducer(backend, 0, 3).allreduce(buffer.data(), {4}, DataType::kFloat32),
               InvalidArgument);
  EXPECT_THROW(AdasumReducer(backend, 0, 2).allreduce(buffer.data(), {4}, DataType::kFloat16),
               InvalidArgument);
  EXPECT_THROW(AdasumReducer(backend, 0, 2).allreduce(buffer.data(), {4}, DataType::kInt32),
               InvalidArgument);
  EXPECT_EQ(backend.calls, 0);
}

}  // namespace
}  // namespace hvd
