// Work: the Python handle of one asynchronous collective. It keeps the
// tensors it reads and writes alive until the collective is done, even when
// Python drops the handle early: the coordinator thread still writes there.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "horovodcpp/work.h"
#include "tensor_import.h"

namespace hvdpy {

namespace py = pybind11;

struct Pending {
  hvd::Work work;
  std::vector<std::shared_ptr<void>> keep;  // the imported tensors' owners
  py::object owner;                         // or the tensors themselves
};

class Work {
 public:
  explicit Work(std::shared_ptr<Pending> pending) : pending_(std::move(pending)) {}
  ~Work();  // an unfinished operation's tensors are parked until it finishes
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  Work(Work&&) = default;

  const hvd::Work& work() const { return pending_->work; }

 private:
  std::shared_ptr<Pending> pending_;
};

// Wraps a submitted operation and the tensors it uses,
Work make_work(hvd::Work work, std::vector<const ImportedTensor*> tensors);
// or the Python object that holds them.
Work make_work_owned(hvd::Work work, py::object owner);
// work.wait(timeout), releasing the GIL unless the operation is done
// already; called with the GIL held.
void wait_without_gil(const hvd::Work& work,
                      std::optional<std::chrono::milliseconds> timeout = std::nullopt);
// Frees the parked tensors of finished operations (called on each submit).
void release_finished();
// After shutdown every operation has finished or failed: frees them all.
void release_all();

void bind_work(py::module_& m);

}  // namespace hvdpy
