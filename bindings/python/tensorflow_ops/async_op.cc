#include "async_op.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "horovodcpp/errors.h"

namespace hvdtf {
namespace {

// Horovod's mapping (horovod/tensorflow/mpi_ops.cc): ranks that disagree are
// a failed precondition, a wrong call an invalid argument, a shut-down job
// aborted; anything else is unknown.
TF_Code code_of(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const hvd::InvalidArgument&) {
    return TF_INVALID_ARGUMENT;
  } catch (const hvd::Mismatch&) {
    return TF_FAILED_PRECONDITION;
  } catch (const hvd::Timeout&) {
    return TF_DEADLINE_EXCEEDED;
  } catch (const hvd::RankFailure&) {
    return TF_ABORTED;
  } catch (const TfError& e) {
    return e.code;
  } catch (const hvd::Error&) {
    return TF_UNKNOWN;
  } catch (...) {
    return TF_INTERNAL;
  }
}

std::string message_of(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

// Finishes ops whose collectives have completed, off the core's threads
// (TensorFlow's done callback runs executor code; copying results can take
// a while). Never destroyed: ops may still complete while the process exits.
class CompletionThread {
 public:
  static CompletionThread& get() {
    static auto* instance = new CompletionThread();
    return *instance;
  }

  void post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
  }

 private:
  CompletionThread() : thread_([this] { loop(); }) { thread_.detach(); }

  void loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return !tasks_.empty(); });
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  std::thread thread_;
};

void complete(std::shared_ptr<AsyncOp> op, const Submitted& submitted) {
  for (const hvd::Work& work : submitted.works) {
    if (auto error = work.error()) return op->finish(error);
  }
  try {
    if (submitted.on_success) submitted.on_success(*op);
  } catch (...) {
    return op->finish(std::current_exception());
  }
  op->finish(nullptr);
}

}  // namespace

// TensorFlow passes done as the address of its by-value std::function
// parameter (tensorflow/c/kernels.cc, CAsyncOpKernel::ComputeAsync), which
// dies when compute_async returns; TF_RunAsyncOpKernelDoneCallback calls it
// through that cast. To call it later, the op moves it to the heap.
AsyncOp::AsyncOp(TF_OpKernelContext* context, TF_AsyncOpKernelDoneCallback* done)
    : context_(context),
      done_(new std::function<void()>(std::move(*reinterpret_cast<std::function<void()>*>(done)))) {
}

AsyncOp::~AsyncOp() { delete done_; }

int AsyncOp::num_inputs() const { return TF_NumInputs(context_); }

const TF_Tensor* AsyncOp::input(int i) {
  Status status;
  TF_Tensor* tensor = nullptr;
  TF_GetInput(context_, i, &tensor, status);
  status.check("reading input " + std::to_string(i));
  tensors_.emplace_back(tensor);
  return tensor;
}

TF_Tensor* AsyncOp::allocate_output(int i, hvd::DataType dtype,
                                    const std::vector<std::int64_t>& shape) {
  Status status;
  std::size_t bytes = hvd::dtype_size(dtype);
  for (std::int64_t d : shape) bytes *= static_cast<std::size_t>(d);
  TF_Tensor* tensor = TF_AllocateOutput(context_, i, tf_dtype(dtype), shape.data(),
                                        static_cast<int>(shape.size()), bytes, status);
  status.check("allocating output " + std::to_string(i));
  tensors_.emplace_back(tensor);
  return tensor;
}

void AsyncOp::finish(std::exception_ptr error) {
  if (error) {
    Status status;
    TF_SetStatus(status, code_of(error), message_of(error).c_str());
    TF_OpKernelContext_Failure(context_, status);
  }
  tensors_.clear();  // before done: TensorFlow may free the context then
  TF_RunAsyncOpKernelDoneCallback(reinterpret_cast<TF_AsyncOpKernelDoneCallback*>(done_));
}

void run_async(TF_OpKernelContext* context, TF_AsyncOpKernelDoneCallback* done,
               const std::function<Submitted(AsyncOp&)>& submit) {
  auto op = std::make_shared<AsyncOp>(context, done);
  auto submitted = std::make_shared<Submitted>();
  try {
    *submitted = submit(*op);
  } catch (...) {
    return op->finish(std::current_exception());
  }
  if (submitted->works.empty()) return complete(op, *submitted);
  // The last Work to complete hands the op to the completion thread.
  auto pending = std::make_shared<std::atomic<std::size_t>>(submitted->works.size());
  for (const hvd::Work& work : submitted->works) {
    work.on_done([op, submitted, pending] {
      if (pending->fetch_sub(1) == 1) {
        CompletionThread::get().post([op, submitted] { complete(op, *submitted); });
      }
    });
  }
}

void run_on_thread(TF_OpKernelContext* context, TF_AsyncOpKernelDoneCallback* done,
                   std::function<void(AsyncOp&)> call) {
  auto op = std::make_shared<AsyncOp>(context, done);
  try {
    std::thread([op, call = std::move(call)] {
      try {
        call(*op);
      } catch (...) {
        return op->finish(std::current_exception());
      }
      op->finish(nullptr);
    }).detach();
  } catch (...) {  // no thread: nothing may escape into TensorFlow's C code
    op->finish(std::current_exception());
  }
}

void fail(TF_OpKernelContext* context, std::exception_ptr error) {
  Status status;
  TF_SetStatus(status, code_of(error), message_of(error).c_str());
  TF_OpKernelContext_Failure(context, status);
}

}  // namespace hvdtf
