// AsyncOp: one execution of an asynchronous TensorFlow kernel, from the
// call that submits its collectives to TensorFlow's done callback. No
// thread waits for the collectives: each Work's on_done() counts down, and
// the last one hands the op to a completion thread, which produces the
// outputs that depend on the results, reports errors as TensorFlow status
// codes and calls done. That is what lets a graph hold any number of
// collectives at once on any number of inter-op threads (see bridge.py).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "horovodcpp/work.h"
#include "tf_c_api.h"
#include "tf_tensors.h"

namespace hvdtf {

class AsyncOp {
 public:
  // Takes over TensorFlow's done callback (see async_op.cc).
  AsyncOp(TF_OpKernelContext* context, TF_AsyncOpKernelDoneCallback* done);
  ~AsyncOp();
  AsyncOp(const AsyncOp&) = delete;
  AsyncOp& operator=(const AsyncOp&) = delete;

  int num_inputs() const;
  // Input i; it stays valid until the op is done.
  const TF_Tensor* input(int i);
  // Allocates output i; it stays valid until the op is done.
  TF_Tensor* allocate_output(int i, hvd::DataType dtype, const std::vector<std::int64_t>& shape);

  // Reports `error` (null: success) to TensorFlow and calls done.
  void finish(std::exception_ptr error);

 private:
  TF_OpKernelContext* context_;
  std::function<void()>* done_;
  std::vector<TensorPtr> tensors_;  // what the collectives read and write
};

// What a kernel submitted: the Works to wait for, and what to do once every
// one of them succeeded (runs on the completion thread; e.g. copy
// library-allocated results into outputs).
struct Submitted {
  std::vector<hvd::Work> works;
  std::function<void(AsyncOp&)> on_success = nullptr;
};

// The body of a collective kernel's compute_async: `submit` reads the inputs,
// allocates outputs and submits the collectives; it never blocks. The op
// completes when the Works do, or at once if `submit` throws.
void run_async(TF_OpKernelContext* context, TF_AsyncOpKernelDoneCallback* done,
               const std::function<Submitted(AsyncOp&)>& submit);

// For the blocking calls the core has no asynchronous form of (barrier,
// join): `call` runs on a thread of its own, which then completes the op.
void run_on_thread(TF_OpKernelContext* context, TF_AsyncOpKernelDoneCallback* done,
                   std::function<void(AsyncOp&)> call);

// Reports `error` on a synchronous kernel's context.
void fail(TF_OpKernelContext* context, std::exception_ptr error);

}  // namespace hvdtf
