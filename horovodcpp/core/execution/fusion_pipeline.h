// FusionPipeline: a fused allreduce on a backend whose transfers wait on a
// network, taken a chunk of the fusion buffer at a time, with the copies
// into the buffer (ahead of the chunk being reduced) and out of it (behind)
// on a helper thread. Only the first chunk's copy in and the last one's copy
// out are not hidden behind the transfers: on two hosts at 1 Gbit/s, a 21 MB
// buffer's copies took 9 ms of each 250 ms step of bench/compiled_bench.py
// when they ran before and after the whole allreduce.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace hvd {

class FusionPipeline {
 public:
  // A chunk's bytes (the last one's fewer): a multiple of every element
  // size, so every rank cuts the same buffer alike. Buffers of fewer than
  // two chunks gain nothing.
  static constexpr std::size_t kChunkBytes = std::size_t{4} << 20;
  static bool worth_it(std::size_t bytes) { return bytes >= 2 * kChunkBytes; }

  // One step on the bytes [begin, end) of the buffer.
  using Step = std::function<void(std::size_t begin, std::size_t end)>;
  using Clock = std::chrono::steady_clock;

  // When the first chunk was copied in, and the last one reduced.
  struct Times {
    Clock::time_point first_copied_in;
    Clock::time_point last_reduced;
  };

  FusionPipeline() = default;
  ~FusionPipeline();  // stops the helper
  FusionPipeline(const FusionPipeline&) = delete;
  FusionPipeline& operator=(const FusionPipeline&) = delete;

  // copy_in on every chunk of `bytes`, in order, on the helper thread;
  // reduce on each chunk once it is in, on this thread; copy_out on each
  // once it is reduced, on the helper. Returns once every chunk is out. If a
  // step throws, the chunks after it are left alone and the exception is
  // rethrown here.
  Times run(std::size_t bytes, const Step& copy_in, const Step& reduce, const Step& copy_out);

 private:
  void help();
  // The helper's part of the current run; false if it stopped on a failure.
  bool copy_chunks();
  std::size_t chunk_end(std::size_t chunk) const;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::thread helper_;
  bool stopping_ = false;
  // The current run; guarded by mutex_.
  bool running_ = false;
  std::size_t bytes_ = 0;
  std::size_t chunks_ = 0;
  std::size_t copied_in_ = 0;
  std::size_t reduced_ = 0;
  bool failed_ = false;
  std::exception_ptr helper_error_;
  const Step* copy_in_ = nullptr;
  const Step* copy_out_ = nullptr;
  Clock::time_point first_copied_in_;
};

}  // namespace hvd
