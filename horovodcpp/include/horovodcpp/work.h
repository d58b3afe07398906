// Work: the handle of an asynchronous collective.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "horovodcpp/export.h"
#include "horovodcpp/tensor.h"

namespace hvd {

namespace detail {
class WorkState;
}

class HVD_EXPORT Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<detail::WorkState> state);

  // Blocks until the operation completes; rethrows its error (hvd::Error).
  // With a timeout, throws hvd::Timeout if it has not completed by then;
  // the operation stays in flight and can be waited on again.
  // CUDA tensors (as torch.distributed's work.wait()): returns once the
  // collective is queued on the GPU, having made the tensor's stream
  // (TensorView::stream) wait for it, so what the caller queues there next
  // sees the result; the host does not wait for the GPU. Read the result
  // on that stream, or after poll() is true.
  void wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt) const;
  // True once the operation has finished, successfully or not (CUDA
  // tensors: run on the GPU too); wait() then returns at once.
  bool poll() const;
  // The error of a completed operation; null if it succeeded or is running.
  std::exception_ptr error() const;
  // The library-allocated output (allgather, alltoall, reducescatter);
  // waits for completion first. For CUDA tensors it is device memory on
  // the input's GPU (Tensor::device()).
  const Tensor& output() const;
  // Alltoall: rows received from each rank; waits for completion first.
  const std::vector<std::int64_t>& received_splits() const;
  // Calls `callback` once the operation has finished (as poll()), successfully or not:
  // at once on this thread if it already has, else on the thread that
  // completes it (a horovodcpp thread). For front ends that must not block
  // a thread while waiting; the callback must be quick and must not call
  // into horovodcpp (it may query this Work).
  void on_done(std::function<void()> callback) const;

  bool valid() const { return state_ != nullptr; }

 private:
  std::shared_ptr<detail::WorkState> state_;
};

}  // namespace hvd
