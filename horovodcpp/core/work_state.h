// The shared state behind a Work handle: completed once by the coordinator
// thread (value or error), waited on by user threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>

#include "horovodcpp/tensor.h"

namespace hvd::detail {

class WorkState {
 public:
  void complete(Tensor output = Tensor());
  void fail(std::exception_ptr error);

  // False if the timeout expired first.
  bool wait(std::optional<std::chrono::milliseconds> timeout);
  bool done() const;
  std::exception_ptr error() const;
  const Tensor& output() const;  // valid once done

 private:
  void finish(Tensor output, std::exception_ptr error);

  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
  Tensor output_;
};

}  // namespace hvd::detail
