// NcclCommunicator: one NCCL communicator over the ranks of a Controller
// (a process set), on one GPU, with its own CUDA stream.
//
// Lifecycle: rank 0 creates the ncclUniqueId and sends it to the others
// over the controller (broadcast_from_root); the communicator is created
// non-blocking, so no NCCL call can block this rank forever: every wait
// polls ncclCommGetAsyncError and, on an error or past the timeout, aborts
// the communicator (ncclCommAbort) and throws. Once aborted it stays
// failed: every later call throws the first error.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <mutex>
#include <string>

#include "core/negotiation/controller.h"

namespace hvd {

class NcclCommunicator {
 public:
  // Collective over the controller's ranks. `timeout` bounds the creation
  // and every synchronize() (HOROVODCPP_NCCL_TIMEOUT_SECONDS by default).
  NcclCommunicator(Controller& controller, int device, std::chrono::milliseconds timeout);
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;
  // Finalizes and destroys (or aborts if failed); never throws.
  ~NcclCommunicator();

  // Calls call(comm, stream) to queue NCCL work (a collective or a group),
  // then waits until NCCL has accepted it. The communicator cannot be
  // aborted (freed) by another thread meanwhile. Throws like check().
  template <typename Call>
  void issue(const char* what, Call call) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      throw_if_failed();
      call(comm_, stream_);
    }
    wait_ready(what);
  }

  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Polls until calls issued on the non-blocking communicator have been
  // accepted (ncclInProgress gone). Throws like check().
  void wait_ready(const char* what);
  // Throws BackendError (after aborting) if NCCL reported an asynchronous
  // error, e.g. a peer that died; a no-op otherwise. Never blocks.
  void check();
  // Waits for everything queued on stream() with check() in between;
  // aborts and throws Timeout past the timeout.
  void synchronize();
  // Aborts the communicator (pending and future calls fail). Idempotent.
  void abort(const std::string& reason);

  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  [[noreturn]] void fail_timeout(const char* what);
  // With mutex_ held.
  void throw_if_failed() const;
  ncclResult_t state_locked();
  void abort_locked(const std::string& reason);

  int device_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;  // null once aborted (ncclCommAbort frees it)
  cudaStream_t stream_ = nullptr;
  std::mutex mutex_;     // abort may come from the poller thread
  std::string failure_;  // set once aborted
};

// HOROVODCPP_NCCL_TIMEOUT_SECONDS (default 300): how long a rank waits for
// NCCL before aborting.
std::chrono::milliseconds nccl_timeout_from_env();

}  // namespace hvd
