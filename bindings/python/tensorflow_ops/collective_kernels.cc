// The collective ops: asynchronous kernels that submit to the core and
// complete when the core's Works do. Their attributes: tensor_name (the
// name every rank submits under; empty: the core's automatic name),
// process_set_id, and per op reduce_op, prescale/postscale_factor or
// root_rank.
#include <algorithm>
#include <cstring>

#include "async_op.h"
#include "horovodcpp/horovodcpp.h"
#include "registration.h"

namespace hvdtf {
namespace {

#define HVD_TF_DTYPES \
  "{uint8, int8, uint16, int16, int32, int64, half, bfloat16, float, double, bool}"
constexpr const char* kOneType = "T: " HVD_TF_DTYPES;
constexpr const char* kTypeList = "T: list(" HVD_TF_DTYPES ")";
#undef HVD_TF_DTYPES

struct Collective {
  explicit Collective(Attrs& attrs)
      : name(attrs.string("tensor_name")), process_set_id(attrs.integer("process_set_id")) {}
  std::string name;
  int process_set_id;
};

struct Reduction : Collective {
  explicit Reduction(Attrs& attrs)
      : Collective(attrs),
        op(static_cast<hvd::ReduceOp>(attrs.integer("reduce_op"))),
        prescale(attrs.real("prescale_factor")),
        postscale(attrs.real("postscale_factor")) {}
  hvd::ReduceOp op;
  double prescale;
  double postscale;
};

struct Broadcast : Collective {
  explicit Broadcast(Attrs& attrs) : Collective(attrs), root_rank(attrs.integer("root_rank")) {}
  int root_rank;
};

std::vector<hvd::TensorView> all_inputs(AsyncOp& op) {
  std::vector<hvd::TensorView> views;
  for (int i = 0; i < op.num_inputs(); ++i) views.push_back(view_of(op.input(i)));
  return views;
}

// Output i: a copy of the library-allocated result `tensor`.
void copy_out(AsyncOp& op, int i, const hvd::Tensor& tensor) {
  TF_Tensor* output = op.allocate_output(i, tensor.dtype(), tensor.shape());
  if (tensor.size_bytes() > 0)
    std::memcpy(TF_TensorData(output), tensor.data(), tensor.size_bytes());
}

void allreduce(void* kernel, TF_OpKernelContext* context, TF_AsyncOpKernelDoneCallback* done) {
  const auto& k = *static_cast<Reduction*>(kernel);
  run_async(context, done, [&](AsyncOp& op) {
    std::vector<hvd::TensorView> inputs = all_inputs(op), outputs;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      outputs.push_back(
          view_of(op.allocate_output(static_cast<int>(i), inputs[i].dtype, inputs[i].shape)));
    }
    const hvd::ProcessSet set = process_set(k.process_set_id);
    if (inputs.size() == 1) {
      return Submitted{{hvd::allreduce_async(inputs[0], outputs[0], k.name, k.op, k.prescale,
                                             k.postscale, set)}};
    }
    return Submitted{
        hvd::grouped_allreduce_async(inputs, outputs, k.name, k.op, k.prescale, k.postscale, set)};
  });
}

// Outputs that the core allocates: one per Work, copied out when done.
Submitted copied_out(std::vector<hvd::Work> works) {
  return Submitted{works, [works](AsyncOp& op) {
                     for (std::size_t i = 0; i < works.size(); ++i) {
                       copy_out(op, static_cast<int>(i), works[i].output());
                     }
                   }};
}

void allgather(void* kernel, TF_OpKernelContext* context, TF_AsyncOpKernelDoneCallback* done) {
  const auto& k = *static_cast<Collective*>(kernel);
  run_async(context, done, [&](AsyncOp& op) {
    std::vector<hvd::TensorView> inputs = all_inputs(op);
    const hvd::ProcessSet set = process_set(k.process_set_id);
    if (inputs.size() == 1) return copied_out({hvd::allgather_async(inputs[0], k.name, set)});
    return copied_out(hvd::grouped_allgather_async(inputs, k.name, set));
  });
}

void reducescatter(void* kernel, TF_OpKernelContext* context, TF_AsyncOpKernelDoneCallback* done) {
  const auto& k = *static_cast<Reduction*>(kernel);
  run_async(context, done, [&](AsyncOp& op) {
    std::vector<hvd::TensorView> inputs = all_inputs(op);
    const hvd::ProcessSet set = process_set(k.process_set_id);
    if (inputs.size() == 1) {
      return copied_out(
          {hvd::reducescatter_async(inputs[0], k.name, k.op, k.prescale, k.postscale, set)});
    }
    return copied_out(
        hvd::grouped_reducescatter_async(inputs, k.name, k.op, k.prescale, k.postscale, set));
  });
}

void broadcast(void* kernel, TF_OpKernelContext* context, TF_AsyncOpKernelDoneCallback* done) {
  const auto& k = *static_cast<Broadcast*>(kernel);
  run_async(context, done, [&](AsyncOp& op) {
    hvd::TensorView input = view_of(op.input(0));
    hvd::TensorView output = view_of(op.allocate_output(0, input.dtype, input.shape));
    // The core broadcasts in place: the root sends its copy of the input.
    if (input.size_bytes() > 0) std::memcpy(output.data, input.data, input.size_bytes());
    return Submitted{
        {hvd::broadcast_async(output, k.root_rank, k.name, process_set(k.process_set_id))}};
  });
}

// Splits travel as int32 or int64 tensors.
template <typename T>
std::vector<std::int64_t> read_as(const hvd::TensorView& splits) {
  const T* data = static_cast<const T*>(splits.data);
  return std::vector<std::int64_t>(data, data + splits.num_elements());
}

template <typename T>
void write_as(TF_Tensor* out, const std::vector<std::int64_t>& splits) {
  std::copy(splits.begin(), splits.end(), static_cast<T*>(TF_TensorData(out)));
}

// Inputs: the tensor and its splits (empty: equal parts). Outputs: the rows
// received and how many came from each rank (in the splits' dtype).
void alltoall(void* kernel, TF_OpKernelContext* context, TF_AsyncOpKernelDoneCallback* done) {
  const auto& k = *static_cast<Collective*>(kernel);
  run_async(context, done, [&](AsyncOp& op) {
    hvd::TensorView input = view_of(op.input(0));
    hvd::TensorView splits = view_of(op.input(1));
    const bool int32 = splits.dtype == hvd::DataType::kInt32;
    hvd::Work work = hvd::alltoall_async(
        input, int32 ? read_as<std::int32_t>(splits) : read_as<std::int64_t>(splits), k.name,
        process_set(k.process_set_id));
    return Submitted{
        {work}, [work, int32](AsyncOp& op) {
          copy_out(op, 0, work.output());
          const std::vector<std::int64_t>& received = work.received_splits();
          TF_Tensor* out =
              op.allocate_output(1, int32 ? hvd::DataType::kInt32 : hvd::DataType::kInt64,
                                 {static_cast<std::int64_t>(received.size())});
          int32 ? write_as<std::int32_t>(out, received) : write_as<std::int64_t>(out, received);
        }};
  });
}

struct ProcessSetKernel {
  explicit ProcessSetKernel(Attrs& attrs) : process_set_id(attrs.integer("process_set_id")) {}
  int process_set_id;
};

void barrier(void* kernel, TF_OpKernelContext* context, TF_AsyncOpKernelDoneCallback* done) {
  const int id = static_cast<ProcessSetKernel*>(kernel)->process_set_id;
  run_on_thread(context, done, [id](AsyncOp&) { hvd::barrier(process_set(id)); });
}

struct NoAttrs {
  explicit NoAttrs(Attrs&) {}
};

void join(void*, TF_OpKernelContext* context, TF_AsyncOpKernelDoneCallback* done) {
  run_on_thread(context, done, [](AsyncOp& op) {
    const std::int32_t last = hvd::join();
    *static_cast<std::int32_t*>(TF_TensorData(op.allocate_output(0, hvd::DataType::kInt32, {}))) =
        last;
  });
}

const char* const kName = "tensor_name: string";
const char* const kSet = "process_set_id: int";
const char* const kOp = "reduce_op: int";
const char* const kPrescale = "prescale_factor: float";
const char* const kPostscale = "postscale_factor: float";

const bool registered = [] {
  register_op({"HorovodcppAllreduce",
               false,
               {"tensor: T"},
               {"output: T"},
               {kOneType, kName, kOp, kPrescale, kPostscale, kSet},
               same_shapes,
               create<Reduction>,
               destroy<Reduction>,
               allreduce});
  register_op({"HorovodcppGroupedAllreduce",
               false,
               {"tensors: T"},
               {"outputs: T"},
               {kTypeList, kName, kOp, kPrescale, kPostscale, kSet},
               same_shapes,
               create<Reduction>,
               destroy<Reduction>,
               allreduce});
  register_op({"HorovodcppAllgather",
               false,
               {"tensor: T"},
               {"output: T"},
               {kOneType, kName, kSet},
               unknown_shapes,
               create<Collective>,
               destroy<Collective>,
               allgather});
  register_op({"HorovodcppGroupedAllgather",
               false,
               {"tensors: T"},
               {"outputs: T"},
               {kTypeList, kName, kSet},
               unknown_shapes,
               create<Collective>,
               destroy<Collective>,
               allgather});
  register_op({"HorovodcppBroadcast",
               false,
               {"tensor: T"},
               {"output: T"},
               {kOneType, kName, "root_rank: int", kSet},
               same_shapes,
               create<Broadcast>,
               destroy<Broadcast>,
               broadcast});
  register_op({"HorovodcppAlltoall",
               false,
               {"tensor: T", "splits: Tsplits"},
               {"output: T", "received_splits: Tsplits"},
               {kOneType, "Tsplits: {int32, int64}", kName, kSet},
               unknown_shapes,
               create<Collective>,
               destroy<Collective>,
               alltoall});
  register_op({"HorovodcppReducescatter",
               false,
               {"tensor: T"},
               {"output: T"},
               {kOneType, kName, kOp, kPrescale, kPostscale, kSet},
               unknown_shapes,
               create<Reduction>,
               destroy<Reduction>,
               reducescatter});
  register_op({"HorovodcppGroupedReducescatter",
               false,
               {"tensors: T"},
               {"outputs: T"},
               {kTypeList, kName, kOp, kPrescale, kPostscale, kSet},
               unknown_shapes,
               create<Reduction>,
               destroy<Reduction>,
               reducescatter});
  register_op({"HorovodcppBarrier",
               true,
               {},
               {},
               {kSet},
               unknown_shapes,
               create<ProcessSetKernel>,
               destroy<ProcessSetKernel>,
               barrier});
  register_op({"HorovodcppJoin",
               true,
               {},
               {"last_rank: int32"},
               {},
               scalar_shapes,
               create<NoAttrs>,
               destroy<NoAttrs>,
               join});
  return true;
}();

}  // namespace
}  // namespace hvdtf
