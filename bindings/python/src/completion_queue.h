// CompletionQueue: tells one Python thread which operations finished,
// without the coordinator thread ever taking the GIL. A Work's completion
// pushes its token; the thread's take() waits for tokens with the GIL
// released. torch.distributed's Work.get_future() is completed this way.
#pragma once

#include <pybind11/pybind11.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace hvdpy {

namespace py = pybind11;

class CompletionQueue {
 public:
  void push(std::int64_t token);
  // Waits up to `timeout_seconds` (forever when None) for tokens; returns
  // up to `limit` of them (none on timeout, or once closed and drained).
  std::vector<std::int64_t> take(std::optional<double> timeout_seconds, std::size_t limit);
  void close();

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::int64_t> tokens_;
  bool closed_ = false;
};

void bind_completion_queue(py::module_& m);

}  // namespace hvdpy
