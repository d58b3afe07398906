#include "work.h"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "horovodcpp/errors.h"
#include "tensor_export.h"

namespace hvdpy {
namespace {

// Operations whose handle Python dropped before they finished. Only touched
// with the GIL held, which also serialises access.
std::vector<std::shared_ptr<Pending>>& parked() {
  static auto* list = new std::vector<std::shared_ptr<Pending>>();  // outlives exit
  return *list;
}

void wait(const Work& w, std::optional<double> timeout_seconds) {
  std::optional<std::chrono::milliseconds> timeout;
  if (timeout_seconds) {
    timeout = std::chrono::milliseconds(static_cast<long long>(*timeout_seconds * 1000.0));
  }
  wait_without_gil(w.work(), timeout);
}

}  // namespace

void wait_without_gil(const hvd::Work& work, std::optional<std::chrono::milliseconds> timeout) {
  // Done already (a burst's waits mostly are): no GIL hand-over.
  std::optional<py::gil_scoped_release> release;
  if (!work.poll()) release.emplace();
  work.wait(timeout);
}

Work::~Work() {
  if (pending_ && !pending_->work.poll()) parked().push_back(std::move(pending_));
}

Work make_work(hvd::Work work, std::vector<const ImportedTensor*> tensors) {
  std::vector<std::shared_ptr<void>> keep;
  for (const ImportedTensor* t : tensors) keep.push_back(t->keep);
  return Work(std::make_shared<Pending>(Pending{std::move(work), std::move(keep), {}}));
}

Work make_work_owned(hvd::Work work, py::object owner) {
  return Work(std::make_shared<Pending>(Pending{std::move(work), {}, std::move(owner)}));
}

void release_finished() {
  auto& list = parked();
  list.erase(std::remove_if(list.begin(), list.end(),
                            [](const std::shared_ptr<Pending>& p) { return p->work.poll(); }),
             list.end());
}

void release_all() {
  auto& list = parked();
  {
    py::gil_scoped_release release;
    for (auto& p : list) {
      try {
        p->work.wait();
      } catch (const hvd::Error&) {
        // the operation failed; only its completion matters here
      }
    }
  }
  list.clear();
}

void bind_work(py::module_& m) {
  py::class_<Work>(m, "Work", "Handle of an asynchronous collective.")
      .def("wait", &wait, py::arg("timeout") = py::none(),
           "Blocks (without the GIL) until done; raises the operation's error. With a\n"
           "timeout in seconds, raises HorovodTimeoutError if still running.")
      .def(
          "poll", [](const Work& w) { return w.work().poll(); },
          "True once the operation has finished, successfully or not.")
      .def(
          "output",
          [](const Work& w) {
            wait(w, std::nullopt);
            return Buffer(w.work().output());
          },
          "The library-allocated result (allgather, alltoall, reducescatter).")
      .def(
          "received_splits",
          [](const Work& w) {
            wait(w, std::nullopt);
            return w.work().received_splits();
          },
          "Alltoall: rows received from each rank.");
}

}  // namespace hvdpy
