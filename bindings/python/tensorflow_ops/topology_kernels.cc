// rank_op, size_op and friends: synchronous kernels that return the job's
// topology when the graph runs (not when it is built), as int32 scalars.
#include "async_op.h"
#include "horovodcpp/horovodcpp.h"
#include "registration.h"

namespace hvdtf {
namespace {

// Horovod's codes for process_set_included_op (horovod/common/common.h).
constexpr std::int32_t kNotInitialized = -1;
constexpr std::int32_t kUnknownSet = -3;

struct Query {
  explicit Query(Attrs& attrs) : process_set_id(attrs.integer("process_set_id")) {}
  int process_set_id;
};

struct NoAttrs {
  explicit NoAttrs(Attrs&) {}
};

void output_scalar(TF_OpKernelContext* context, std::int32_t value) {
  Status status;
  TF_Tensor* output = TF_AllocateOutput(context, 0, TF_INT32, nullptr, 0, sizeof(value), status);
  status.check("allocating the output");
  *static_cast<std::int32_t*>(TF_TensorData(output)) = value;
  TF_DeleteTensor(output);
}

// compute_func returning `value(kernel)`; errors become the op's status.
template <std::int32_t (*value)(void*)>
void compute(void* kernel, TF_OpKernelContext* context) {
  try {
    output_scalar(context, value(kernel));
  } catch (...) {
    fail(context, std::current_exception());
  }
}

std::int32_t set_size(void* kernel) {
  return process_set(static_cast<Query*>(kernel)->process_set_id).size();
}
std::int32_t rank(void*) { return hvd::rank(); }
std::int32_t local_rank(void*) { return hvd::local_rank(); }
std::int32_t local_size(void*) { return hvd::local_size(); }

std::int32_t included(void* kernel) {
  if (!hvd::is_initialized()) return kNotInitialized;
  const int id = static_cast<Query*>(kernel)->process_set_id;
  for (const hvd::ProcessSet& set : hvd::process_sets()) {
    if (set.id() == id) return set.included() ? 1 : 0;
  }
  return kUnknownSet;
}

const bool registered = [] {
  const std::vector<const char*> set_attr{"process_set_id: int"};
  register_op({"HorovodcppSize",
               true,
               {},
               {"size: int32"},
               set_attr,
               scalar_shapes,
               create<Query>,
               destroy<Query>,
               nullptr,
               compute<set_size>});
  register_op({"HorovodcppProcessSetIncluded",
               true,
               {},
               {"included: int32"},
               set_attr,
               scalar_shapes,
               create<Query>,
               destroy<Query>,
               nullptr,
               compute<included>});
  register_op({"HorovodcppRank",
               true,
               {},
               {"rank: int32"},
               {},
               scalar_shapes,
               create<NoAttrs>,
               destroy<NoAttrs>,
               nullptr,
               compute<rank>});
  register_op({"HorovodcppLocalRank",
               true,
               {},
               {"local_rank: int32"},
               {},
               scalar_shapes,
               create<NoAttrs>,
               destroy<NoAttrs>,
               nullptr,
               compute<local_rank>});
  register_op({"HorovodcppLocalSize",
               true,
               {},
               {"local_size: int32"},
               {},
               scalar_shapes,
               create<NoAttrs>,
               destroy<NoAttrs>,
               nullptr,
               compute<local_size>});
  return true;
}();

}  // namespace
}  // namespace hvdtf
