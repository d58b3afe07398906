#include "core/execution/fusion_pipeline.h"

#include <algorithm>

namespace hvd {

FusionPipeline::~FusionPipeline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (helper_.joinable()) helper_.join();
  if (second_lane_.joinable()) second_lane_.join();
}

std::vector<std::size_t> FusionPipeline::chunk_bounds(std::size_t bytes) {
  if (bytes < 4 * kEdgeChunkBytes) return {0, bytes};
  std::vector<std::size_t> bounds = {0, kEdgeChunkBytes};
  const std::size_t middle_end = bytes - kEdgeChunkBytes;
  while (middle_end - bounds.back() >= kChunkBytes + kChunkBytes / 2) {
    bounds.push_back(bounds.back() + kChunkBytes);
  }
  bounds.push_back(middle_end);
  bounds.push_back(bytes);
  return bounds;
}

FusionPipeline::Times FusionPipeline::run(std::vector<std::size_t> bounds, const Step& copy_in,
                                          const Reduce& reduce, const Step& copy_out, int lanes) {
  Times times;
  copy_in(bounds[0], bounds[1]);
  times.first_copied_in = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    bounds_ = std::move(bounds);
    copied_in_ = 1;
    reduced_.assign(chunks(), 0);
    failed_ = false;
    error_ = nullptr;
    copy_in_ = &copy_in;
    reduce_ = &reduce;
    copy_out_ = &copy_out;
    lanes_ = chunks() > 1 && lanes > 1 ? 2 : 1;
    running_ = true;
    second_lane_running_ = lanes_ == 2;
    if (!helper_.joinable()) helper_ = std::thread([this] { help(); });
    if (lanes_ == 2 && !second_lane_.joinable()) {
      second_lane_ = std::thread([this] { run_second_lane(); });
    }
  }
  changed_.notify_all();
  std::exception_ptr error;
  try {
    reduce_lane(0);
    const std::size_t last = chunks() - 1;
    bool reduced = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return reduced_[last] || failed_; });
      reduced = !failed_;
    }
    times.last_reduced = Clock::now();
    if (reduced) copy_out(bounds_[last], bounds_[last + 1]);
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (error) failed_ = true;
    changed_.notify_all();
    changed_.wait(lock, [&] { return !running_ && !second_lane_running_; });
    if (!error) error = error_;
  }
  if (error) std::rethrow_exception(error);
  return times;
}

void FusionPipeline::reduce_lane(int lane) {
  for (std::size_t chunk = static_cast<std::size_t>(lane); chunk < chunks();
       chunk += static_cast<std::size_t>(lanes_)) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return copied_in_ > chunk || failed_; });
      if (failed_) return;  // the other thread's error is rethrown
    }
    (*reduce_)(bounds_[chunk], bounds_[chunk + 1], lane);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      reduced_[chunk] = 1;
    }
    changed_.notify_all();
  }
}

void FusionPipeline::fail_with(std::exception_ptr error) {
  if (!error_) error_ = std::move(error);
  failed_ = true;
}

void FusionPipeline::run_second_lane() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || second_lane_running_; });
    if (stopping_) return;
    lock.unlock();
    std::exception_ptr error;
    try {
      reduce_lane(1);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error) fail_with(error);
    second_lane_running_ = false;
    changed_.notify_all();
  }
}

void FusionPipeline::help() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || running_; });
    if (stopping_) return;
    lock.unlock();
    const bool completed = copy_chunks();
    lock.lock();
    if (!completed) failed_ = true;
    running_ = false;
    changed_.notify_all();
  }
}

bool FusionPipeline::copy_chunks() {
  try {
    // Every chunk in first: copying is faster than the network, and the
    // reduction then never waits for it after the first chunk.
    for (std::size_t chunk = 1; chunk < chunks(); ++chunk) {
      (*copy_in_)(bounds_[chunk], bounds_[chunk + 1]);
      std::lock_guard<std::mutex> lock(mutex_);
      ++copied_in_;
      changed_.notify_all();
      if (failed_) return false;
    }
    for (std::size_t chunk = 0; chunk + 1 < chunks(); ++chunk) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return reduced_[chunk] || failed_; });
        if (failed_) return false;
      }
      (*copy_out_)(bounds_[chunk], bounds_[chunk + 1]);
    }
    return true;
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    fail_with(std::current_exception());
    changed_.notify_all();
    return false;
  }
}

}  // namespace hvd
