// HVD_NCCL_CHECK: each NCCL call wrapped once; a failure throws
// BackendError with NCCL's message. ncclInProgress is not a failure: calls
// on a non-blocking communicator return it while they are being set up
// (NcclCommunicator::wait_ready then polls them).
#pragma once

#include <nccl.h>

#include "base/check.h"

#define HVD_NCCL_CHECK(call)                                                                   \
  do {                                                                                         \
    const ncclResult_t hvd_nccl_status_ = (call);                                              \
    HVD_CHECK(hvd_nccl_status_ == ncclSuccess || hvd_nccl_status_ == ncclInProgress,           \
              ::hvd::BackendError, #call " failed: " << ncclGetErrorString(hvd_nccl_status_)); \
  } while (0)
