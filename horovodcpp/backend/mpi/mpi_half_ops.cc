#include "backend/mpi/mpi_half_ops.h"

#include <cstddef>
#include <iterator>

#include "backend/mpi/mpi_check.h"
#include "core/check.h"
#include "core/reduction.h"

namespace hvd {
namespace {

constexpr DataType kHalfTypes[] = {DataType::kFloat16, DataType::kBFloat16};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};
static_assert(std::size(kHalfTypes) == MpiHalfOps::kNumHalfTypes);
static_assert(std::size(kOps) == MpiHalfOps::kNumOps);

// noexcept: an exception must not unwind through MPI's C frames.
template <DataType kDtype, ReduceOp kOp>
void reduce_half(void* in, void* inout, int* len, MPI_Datatype*) noexcept {
  reduce_into(kDtype, kOp, inout, in, static_cast<std::size_t>(*len));
}

// Indexed like kHalfTypes x kOps.
MPI_User_function* const kFunctions[][MpiHalfOps::kNumOps] = {
    {&reduce_half<DataType::kFloat16, ReduceOp::kSum>,
     &reduce_half<DataType::kFloat16, ReduceOp::kMin>,
     &reduce_half<DataType::kFloat16, ReduceOp::kMax>,
     &reduce_half<DataType::kFloat16, ReduceOp::kProduct>},
    {&reduce_half<DataType::kBFloat16, ReduceOp::kSum>,
     &reduce_half<DataType::kBFloat16, ReduceOp::kMin>,
     &reduce_half<DataType::kBFloat16, ReduceOp::kMax>,
     &reduce_half<DataType::kBFloat16, ReduceOp::kProduct>},
};

int half_index(DataType dtype) {
  for (int i = 0; i < static_cast<int>(std::size(kHalfTypes)); ++i) {
    if (kHalfTypes[i] == dtype) return i;
  }
  HVD_THROW(InvalidArgument, "no MPI half-precision type for " << dtype_name(dtype));
}

int op_index(ReduceOp op) {
  for (int i = 0; i < static_cast<int>(std::size(kOps)); ++i) {
    if (kOps[i] == op) return i;
  }
  HVD_THROW(InvalidArgument, "no MPI half-precision op for " << reduce_op_name(op));
}

}  // namespace

MpiHalfOps::MpiHalfOps() {
  for (int d = 0; d < kNumHalfTypes; ++d) {
    datatypes_[d] = MPI_DATATYPE_NULL;
    for (int o = 0; o < kNumOps; ++o) ops_[d][o] = MPI_OP_NULL;
  }
  try {
    for (int d = 0; d < kNumHalfTypes; ++d) {
      HVD_MPI_CHECK(MPI_Type_contiguous(2, MPI_BYTE, &datatypes_[d]));
      HVD_MPI_CHECK(MPI_Type_commit(&datatypes_[d]));
      for (int o = 0; o < kNumOps; ++o) {
        HVD_MPI_CHECK(MPI_Op_create(kFunctions[d][o], /*commute=*/1, &ops_[d][o]));
      }
    }
  } catch (...) {
    release();
    throw;
  }
}

MpiHalfOps::~MpiHalfOps() { release(); }

void MpiHalfOps::release() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (int d = 0; d < kNumHalfTypes; ++d) {
    if (datatypes_[d] != MPI_DATATYPE_NULL) MPI_Type_free(&datatypes_[d]);
    for (int o = 0; o < kNumOps; ++o) {
      if (ops_[d][o] != MPI_OP_NULL) MPI_Op_free(&ops_[d][o]);
    }
  }
}

MPI_Datatype MpiHalfOps::datatype(DataType dtype) const { return datatypes_[half_index(dtype)]; }

MPI_Op MpiHalfOps::op(DataType dtype, ReduceOp op) const {
  return ops_[half_index(dtype)][op_index(op)];
}

}  // namespace hvd
