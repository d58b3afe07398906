#include "backend/nccl/nccl_types.h"

#include "base/check.h"

namespace hvd {

ncclDataType_t nccl_reduction_type(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return ncclUint8;
    case DataType::kInt8: return ncclInt8;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
    case DataType::kBool: return ncclUint8;
    case DataType::kUInt16:
    case DataType::kInt16: break;
  }
  HVD_THROW(InvalidArgument, "NCCL cannot reduce " << dtype_name(dtype)
                                                   << " tensors (it has no 16-bit integer type); "
                                                      "use HOROVODCPP_GPU_OPERATIONS=mpi or gloo");
}

ncclDataType_t nccl_movement_type(DataType dtype, std::size_t& count) {
  if (dtype == DataType::kUInt16 || dtype == DataType::kInt16) {
    count *= 2;
    return ncclUint8;
  }
  return nccl_reduction_type(dtype);
}

ncclRedOp_t nccl_op(ReduceOp op, DataType dtype) {
  const bool boolean = dtype == DataType::kBool;
  switch (op) {
    case ReduceOp::kSum: return boolean ? ncclMax : ncclSum;
    case ReduceOp::kProduct: return boolean ? ncclMin : ncclProd;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum: break;
  }
  HVD_THROW(InvalidArgument, "the NCCL backend takes Sum, Min, Max or Product, not "
                                 << reduce_op_name(op) << " (the core turns Average into Sum)");
}

}  // namespace hvd
