// Registering horovodcpp's TensorFlow ops and their CPU kernels through the
// C API, and what their kernels share: attributes, process sets, shapes.
#pragma once

#include <string>
#include <vector>

#include "horovodcpp/process_set.h"
#include "tf_c_api.h"

namespace hvdtf {

using ShapeFn = void (*)(TF_ShapeInferenceContext*, TF_Status*);

// One op: its definition (specs as in REGISTER_OP: "tensor: T", "T: type")
// and its kernel, asynchronous (compute_async) or not (compute). Stateful
// ops are never pruned, folded or merged, and tf.function runs them in
// program order; the collectives are not (as in Horovod), so that a graph
// runs its independent collectives at once.
struct OpSpec {
  const char* name;
  bool stateful;
  std::vector<const char*> inputs;
  std::vector<const char*> outputs;
  std::vector<const char*> attrs;
  ShapeFn shape_fn;
  void* (*create)(TF_OpKernelConstruction*);
  void (*destroy)(void*);
  void (*compute_async)(void*, TF_OpKernelContext*, TF_AsyncOpKernelDoneCallback*) = nullptr;
  void (*compute)(void*, TF_OpKernelContext*) = nullptr;
};

// Registers the op and its kernel; a failure is printed (TensorFlow then
// reports the op as missing).
void register_op(const OpSpec& spec);

// Output i has input i's shape / every output is a scalar / unknown (the
// Python side sets what it knows).
void same_shapes(TF_ShapeInferenceContext* context, TF_Status* status);
void scalar_shapes(TF_ShapeInferenceContext* context, TF_Status* status);
void unknown_shapes(TF_ShapeInferenceContext* context, TF_Status* status);

// A kernel's attributes, read when TensorFlow creates it.
class Attrs {
 public:
  explicit Attrs(TF_OpKernelConstruction* context) : context_(context) {}
  int integer(const char* name);
  double real(const char* name);
  std::string string(const char* name);

 private:
  TF_OpKernelConstruction* context_;
};

// The registered process set with this id (0: the global set);
// InvalidArgument if there is none.
hvd::ProcessSet process_set(int id);

// create_func for kernels of type K (constructed from Attrs); a bad
// attribute fails the construction.
template <typename K>
void* create(TF_OpKernelConstruction* context);
template <typename K>
void destroy(void* kernel) {
  delete static_cast<K*>(kernel);
}

void fail_construction(TF_OpKernelConstruction* context, std::exception_ptr error);

template <typename K>
void* create(TF_OpKernelConstruction* context) {
  try {
    Attrs attrs(context);
    return new K(attrs);
  } catch (...) {
    fail_construction(context, std::current_exception());
    return nullptr;
  }
}

}  // namespace hvdtf
