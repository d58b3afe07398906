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

std::size_t FusionPipeline::chunk_end(std::size_t chunk) const {
  return std::min(bytes_, (chunk + 1) * kChunkBytes);
}

FusionPipeline::Times FusionPipeline::run(std::size_t bytes, const Step& copy_in,
                                          const Step& reduce, const Step& copy_out) {
  Times times;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    bytes_ = bytes;
    chunks_ = (bytes + kChunkBytes - 1) / kChunkBytes;
    copied_in_ = reduced_ = 0;
    failed_ = false;
    helper_error_ = nullptr;
    copy_in_ = &copy_in;
    copy_out_ = &copy_out;
    running_ = true;
    if (!helper_.joinable()) helper_ = std::thread([this] { help(); });
  }
  changed_.notify_all();
  std::exception_ptr error;
  for (std::size_t chunk = 0; chunk < chunks_; ++chunk) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return copied_in_ > chunk || failed_; });
      if (failed_) break;
      if (chunk == 0) times.first_copied_in = first_copied_in_;
    }
    try {
      reduce(chunk * kChunkBytes, chunk_end(chunk));
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error) {
        failed_ = true;
      } else {
        reduced_ = chunk + 1;
      }
    }
    changed_.notify_all();
    if (error) break;
    if (chunk + 1 == chunks_) times.last_reduced = Clock::now();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !running_; });
  if (!error) error = helper_error_;
  if (error) std::rethrow_exception(error);
  return times;
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
    for (std::size_t chunk = 0; chunk < chunks_; ++chunk) {
      (*copy_in_)(chunk * kChunkBytes, chunk_end(chunk));
      std::lock_guard<std::mutex> lock(mutex_);
      if (chunk == 0) first_copied_in_ = Clock::now();
      ++copied_in_;
      changed_.notify_all();
      if (failed_) return false;
    }
    for (std::size_t chunk = 0; chunk < chunks_; ++chunk) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return reduced_ > chunk || failed_; });
        if (failed_) return false;
      }
      (*copy_out_)(chunk * kChunkBytes, chunk_end(chunk));
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
