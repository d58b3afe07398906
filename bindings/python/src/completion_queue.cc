#include "completion_queue.h"

#include <pybind11/stl.h>

#include <chrono>

#include "work.h"

namespace hvdpy {

void CompletionQueue::push(std::int64_t token) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tokens_.push_back(token);
  }
  ready_.notify_one();
}

std::vector<std::int64_t> CompletionQueue::take(std::optional<double> timeout_seconds,
                                                std::size_t limit) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto any = [this] { return !tokens_.empty() || closed_; };
  if (timeout_seconds) {
    ready_.wait_for(lock, std::chrono::duration<double>(*timeout_seconds), any);
  } else {
    ready_.wait(lock, any);
  }
  std::vector<std::int64_t> taken;
  while (!tokens_.empty() && taken.size() < limit) {
    taken.push_back(tokens_.front());
    tokens_.pop_front();
  }
  if (!tokens_.empty()) ready_.notify_one();  // the rest for another taker
  return taken;
}

void CompletionQueue::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  ready_.notify_all();
}

void bind_completion_queue(py::module_& m) {
  py::class_<CompletionQueue, std::shared_ptr<CompletionQueue>>(
      m, "CompletionQueue",
      "Tokens of finished operations for one Python thread (Work.notify pushes them).")
      .def(py::init<>())
      .def("take", &CompletionQueue::take, py::arg("timeout") = py::none(),
           py::arg("limit") = std::size_t(1) << 20, py::call_guard<py::gil_scoped_release>(),
           "Waits (without the GIL) for tokens; returns up to `limit` of them, [] on timeout\n"
           "or once closed. Several threads may take from one queue.")
      .def("close", &CompletionQueue::close, "Wakes take() for good.");
  m.def(
      "notify_when_done",
      [](const Work& work, std::shared_ptr<CompletionQueue> queue, std::int64_t token) {
        work.work().on_done([queue = std::move(queue), token] { queue->push(token); });
      },
      py::arg("work"), py::arg("queue"), py::arg("token"),
      "Pushes `token` to `queue` once `work` has finished (at once if it has).");
}

}  // namespace hvdpy
