#include "backend/mpi/mpi_user_ops.h"

#include <cstddef>

#include "base/check.h"
#include "core/execution/reduction.h"

namespace hvd {
namespace {

constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

// noexcept: an exception must not unwind through MPI's C frames.
template <DataType kDtype, ReduceOp kOp>
void reduce(void* in, void* inout, int* len, MPI_Datatype*) noexcept {
  reduce_into(kDtype, kOp, inout, in, static_cast<std::size_t>(*len));
}

template <DataType kDtype>
MPI_User_function* function_for(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return &reduce<kDtype, ReduceOp::kSum>;
    case ReduceOp::kMin: return &reduce<kDtype, ReduceOp::kMin>;
    case ReduceOp::kMax: return &reduce<kDtype, ReduceOp::kMax>;
    case ReduceOp::kProduct: return &reduce<kDtype, ReduceOp::kProduct>;
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum: break;
  }
  return nullptr;
}

// The user function for (dtype, op), or null where MPI's built-in is right.
MPI_User_function* user_function(DataType dtype, ReduceOp op) {
  const bool arithmetic = op == ReduceOp::kSum || op == ReduceOp::kProduct;
  switch (dtype) {
    case DataType::kFloat16: return function_for<DataType::kFloat16>(op);
    case DataType::kBFloat16: return function_for<DataType::kBFloat16>(op);
    case DataType::kUInt8: return arithmetic ? function_for<DataType::kUInt8>(op) : nullptr;
    case DataType::kInt8: return arithmetic ? function_for<DataType::kInt8>(op) : nullptr;
    case DataType::kUInt16: return arithmetic ? function_for<DataType::kUInt16>(op) : nullptr;
    case DataType::kInt16: return arithmetic ? function_for<DataType::kInt16>(op) : nullptr;
    default: return nullptr;
  }
}

int op_index(ReduceOp op) {
  for (int i = 0; i < static_cast<int>(std::size(kOps)); ++i) {
    if (kOps[i] == op) return i;
  }
  HVD_THROW(InvalidArgument, "no MPI op for " << reduce_op_name(op));
}

}  // namespace

MpiUserOps::MpiUserOps() {
  for (auto& ops : ops_) {
    for (MPI_Op& op : ops) op = MPI_OP_NULL;
  }
  try {
    for (MPI_Datatype& datatype : half_datatypes_) {
      HVD_MPI_CHECK(MPI_Type_contiguous(2, MPI_BYTE, &datatype));
      HVD_MPI_CHECK(MPI_Type_commit(&datatype));
    }
    for (int d = 0; d < kNumDataTypes; ++d) {
      for (int o = 0; o < kNumOps; ++o) {
        if (auto* function = user_function(static_cast<DataType>(d), kOps[o])) {
          HVD_MPI_CHECK(MPI_Op_create(function, /*commute=*/1, &ops_[d][o]));
        }
      }
    }
  } catch (...) {
    release();
    throw;
  }
}

MpiUserOps::~MpiUserOps() { release(); }

void MpiUserOps::release() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Datatype& datatype : half_datatypes_) {
    if (datatype != MPI_DATATYPE_NULL) MPI_Type_free(&datatype);
  }
  for (auto& ops : ops_) {
    for (MPI_Op& op : ops) {
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
    }
  }
}

MPI_Datatype MpiUserOps::half_datatype(DataType dtype) const {
  HVD_CHECK(dtype == DataType::kFloat16 || dtype == DataType::kBFloat16, InvalidArgument,
            "no MPI half-precision type for " << dtype_name(dtype));
  return half_datatypes_[dtype == DataType::kFloat16 ? 0 : 1];
}

MPI_Op MpiUserOps::op(DataType dtype, ReduceOp op) const {
  return ops_[static_cast<int>(dtype)][op_index(op)];
}

}  // namespace hvd
