#include "backend/nccl/nccl_communicator.h"

#include <cstring>
#include <thread>

#include "backend/nccl/nccl_check.h"
#include "gpu/cuda_check.h"
#include "settings/settings.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::microseconds(20);

}  // namespace

std::chrono::milliseconds nccl_timeout_from_env() {
  return settings::timeout_of(settings::read_seconds(settings::Setting::kNcclTimeoutSeconds));
}

NcclCommunicator::NcclCommunicator(Controller& controller, int device,
                                   std::chrono::milliseconds timeout)
    : device_(device),
      rank_(controller.topology().rank),
      size_(controller.topology().size),
      timeout_(timeout) {
  // Every rank takes part in the exchange before anything of its own can
  // fail (id creation, device selection), so no rank is left waiting in
  // broadcast_from_root; a rank failing after it leaves the others in the
  // non-blocking init, which gives up after the timeout.
  ncclUniqueId id{};
  std::string message;  // stays empty if rank 0 cannot create the id
  ncclResult_t id_status = ncclSuccess;
  if (rank_ == 0) {
    id_status = ncclGetUniqueId(&id);
    if (id_status == ncclSuccess) message.assign(id.internal, sizeof(id.internal));
  }
  message = controller.broadcast_from_root(message);
  HVD_CHECK(id_status == ncclSuccess, BackendError,
            "ncclGetUniqueId failed: " << ncclGetErrorString(id_status));
  HVD_CHECK(message.size() == sizeof(id.internal), BackendError,
            "rank 0 could not create the NCCL unique id");
  std::memcpy(id.internal, message.data(), sizeof(id.internal));

  HVD_CHECK(device_ >= 0, BackendError,
            "this rank sees no CUDA device, but takes part in a collective of CUDA tensors "
            "(a joined rank adds its zeros on its GPU)");
  set_cuda_device(device_);
  HVD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // never block in NCCL: we poll and can abort
  try {
    HVD_NCCL_CHECK(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config));
    wait_ready("ncclCommInitRankConfig");
  } catch (...) {
    abort("creation failed");
    cudaStreamDestroy(stream_);
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(device_);
  if (comm_) {
    // Finalize flushes outstanding work, bounded like every wait.
    try {
      issue("ncclCommFinalize",
            [](ncclComm_t comm, cudaStream_t) { HVD_NCCL_CHECK(ncclCommFinalize(comm)); });
    } catch (...) {
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (comm_) ncclCommDestroy(comm_);
  }
  cudaStreamDestroy(stream_);
}

void NcclCommunicator::throw_if_failed() const {
  HVD_CHECK(failure_.empty(), BackendError, "NCCL communicator aborted: " << failure_);
}

// The communicator's state: ncclSuccess, ncclInProgress or an error.
ncclResult_t NcclCommunicator::state_locked() {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t status = ncclCommGetAsyncError(comm_, &state);
  return status == ncclSuccess ? state : status;
}

void NcclCommunicator::wait_ready(const char* what) {
  const auto deadline = Clock::now() + timeout_;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      throw_if_failed();
      const ncclResult_t state = state_locked();
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) {
        abort_locked(std::string(what) + ": " + ncclGetErrorString(state));
        throw_if_failed();
      }
    }
    if (Clock::now() > deadline) fail_timeout(what);
    std::this_thread::sleep_for(kPollInterval);
  }
}

void NcclCommunicator::check() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.empty()) {
    const ncclResult_t state = state_locked();
    if (state != ncclSuccess && state != ncclInProgress) {
      const char* detail = ncclGetLastError(comm_);
      abort_locked(std::string("NCCL reported an asynchronous error: ") +
                   ncclGetErrorString(state) +
                   (detail && *detail ? std::string(" (") + detail + ")" : ""));
    }
  }
  throw_if_failed();
}

void NcclCommunicator::synchronize() {
  const auto deadline = Clock::now() + timeout_;
  while (true) {
    check();
    const cudaError_t status = cudaStreamQuery(stream_);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) {
      abort(std::string("CUDA error on the NCCL stream: ") + cudaGetErrorString(status));
      check();
    }
    if (Clock::now() > deadline) fail_timeout("synchronize");
    std::this_thread::sleep_for(kPollInterval);
  }
}

void NcclCommunicator::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  abort_locked(reason);
}

void NcclCommunicator::abort_locked(const std::string& reason) {
  if (!failure_.empty()) return;
  failure_ = reason;
  // Unblocks kernels waiting on peers that will never come, and frees comm_.
  if (comm_) ncclCommAbort(comm_);
  comm_ = nullptr;
}

void NcclCommunicator::fail_timeout(const char* what) {
  const std::string reason = std::string(what) + " did not complete within " +
                             std::to_string(timeout_.count()) + " ms (a peer may have died)";
  abort(reason);
  HVD_THROW(Timeout, "NCCL " << reason << "; the communicator was aborted");
}

}  // namespace hvd
