// FusionPipeline: a fused allreduce on a backend whose transfers wait on a
// network, taken a chunk of the fusion buffer at a time (two chunks at once
// where the backend has two allreduce lanes), with the copies
// into the buffer (ahead of the chunk being reduced) and out of it (behind)
// on a helper thread. Only the first chunk's copy in and the last one's copy
// out are not hidden behind the transfers, and the calling thread does those
// two itself: on a busy machine a wake-up of the other thread can take
// milliseconds (2-3 ms on two hosts sharing 2 cores, bench/compiled_bench.py).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hvd {

class FusionPipeline {
 public:
  // Chunk sizes, multiples of every element size so that every rank cuts
  // the same buffer alike. The first and the last chunk are small: theirs
  // are the copies not hidden. The others are kChunkBytes but the last of
  // them, which takes the rest (from half to one and a half chunks): a rest
  // of its own would cost a whole round of the backend's algorithm for
  // little data.
  static constexpr std::size_t kChunkBytes = std::size_t{4} << 20;
  static constexpr std::size_t kEdgeChunkBytes = std::size_t{1} << 20;
  static bool worth_it(std::size_t bytes) { return bytes >= kChunkBytes; }
  // The chunks' offsets, and `bytes` last: chunk i is [bounds[i], bounds[i+1]).
  static std::vector<std::size_t> chunk_bounds(std::size_t bytes);

  // One step on the bytes [begin, end) of the buffer.
  using Step = std::function<void(std::size_t begin, std::size_t end)>;
  // A chunk's reduction in lane `lane` (< the run's lanes): each lane takes
  // every lanes-th chunk, in order.
  using Reduce = std::function<void(std::size_t begin, std::size_t end, int lane)>;
  using Clock = std::chrono::steady_clock;

  // When the first chunk was copied in, and the last one reduced.
  struct Times {
    Clock::time_point first_copied_in;
    Clock::time_point last_reduced;
  };

  FusionPipeline() = default;
  ~FusionPipeline();  // stops the helper and the second lane
  FusionPipeline(const FusionPipeline&) = delete;
  FusionPipeline& operator=(const FusionPipeline&) = delete;

  // copy_in on every chunk of `bounds` (chunk_bounds of a buffer, or cut
  // alike: bounds[i] to bounds[i + 1]), in order: the first on this thread,
  // the others on the helper; reduce on each chunk once it is in: with one
  // lane all on this thread, with two the even chunks on this thread and
  // the odd ones on a thread of the second lane, at the same time; copy_out
  // on each once it is reduced: the last on this thread, the others on the
  // helper. Returns once every chunk is out. If a step throws, the chunks
  // after it are left alone and the exception is rethrown here. `lanes`
  // above 2 are taken as 2.
  Times run(std::vector<std::size_t> bounds, const Step& copy_in, const Reduce& reduce,
            const Step& copy_out, int lanes = 1);

 private:
  void help();
  void run_second_lane();
  // The helper's part of the current run; false if it stopped on a failure.
  bool copy_chunks();
  std::size_t chunks() const { return bounds_.size() - 1; }
  // Reduces the lane's chunks in order. Throws what a step threw.
  void reduce_lane(int lane);
  // Records that a step of the run threw (guarded by mutex_).
  void fail_with(std::exception_ptr error);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::thread helper_;
  std::thread second_lane_;
  bool stopping_ = false;
  // The current run; guarded by mutex_.
  bool running_ = false;              // the helper's part
  bool second_lane_running_ = false;  // the second lane's part
  int lanes_ = 1;
  std::vector<std::size_t> bounds_;  // chunk_bounds of the run's bytes
  std::size_t copied_in_ = 0;
  std::vector<char> reduced_;  // per chunk
  bool failed_ = false;
  std::exception_ptr error_;  // the first step that threw on another thread
  const Step* copy_in_ = nullptr;
  const Reduce* reduce_ = nullptr;
  const Step* copy_out_ = nullptr;
};

}  // namespace hvd
