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

FusionPipeline::Times FusionPipeline::run(std::size_t bytes, const Step& copy_in,
                                          const Step& reduce, const Step& copy_out) {
  Times times;
  std::vector<std::size_t> bounds = chunk_bounds(bytes);
  copy_in(bounds[0], bounds[1]);
  times.first_copied_in = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    bounds_ = std::move(bounds);
    copied_in_ = 1;
    reduced_ = 0;
    failed_ = false;
    helper_error_ = nullptr;
    copy_in_ = &copy_in;
    copy_out_ = &copy_out;
    running_ = true;
    if (!helper_.joinable()) helper_ = std::thread([this] { help(); });
  }
  changed_.notify_all();
  std::exception_ptr error;
  try {
    times.last_reduced = reduce_chunks(reduce, copy_out);
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (error) failed_ = true;
    changed_.notify_all();
    changed_.wait(lock, [&] { return !running_; });
    if (!error) error = helper_error_;
  }
  if (error) std::rethrow_exception(error);
  return times;
}

FusionPipeline::Clock::time_point FusionPipeline::reduce_chunks(const Step& reduce,
                                                                const Step& copy_out) {
  for (std::size_t chunk = 0; chunk < chunks(); ++chunk) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return copied_in_ > chunk || failed_; });
      if (failed_) return Clock::now();  // the helper's error is rethrown
    }
    reduce(bounds_[chunk], bounds_[chunk + 1]);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      reduced_ = chunk + 1;
    }
    changed_.notify_all();
  }
  const Clock::time_point last_reduced = Clock::now();
  copy_out(bounds_[chunks() - 1], bounds_[chunks()]);
  return last_reduced;
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
        changed_.wait(lock, [&] { return reduced_ > chunk || failed_; });
        if (failed_) return false;
      }
      (*copy_out_)(bounds_[chunk], bounds_[chunk + 1]);
    }
    return true;
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    helper_error_ = std::current_exception();
    failed_ = true;
    changed_.notify_all();
    return false;
  }
}

}  // namespace hvd
