// MPI has no float16/bfloat16 types (Open MPI 4), so the backend reduces
// them with its own 2-byte datatypes and user ops that call reduce_into.
#pragma once

#include "backend/mpi/mpi_check.h"
#include "horovodcpp/types.h"

namespace hvd {

// Creates the datatypes and ops on construction (MPI must be initialized)
// and frees them on destruction (unless MPI is already finalized).
class MpiHalfOps {
 public:
  static constexpr int kNumHalfTypes = 2;  // float16, bfloat16
  static constexpr int kNumOps = 4;        // Sum, Min, Max, Product

  MpiHalfOps();
  ~MpiHalfOps();
  MpiHalfOps(const MpiHalfOps&) = delete;
  MpiHalfOps& operator=(const MpiHalfOps&) = delete;

  // `dtype` is kFloat16 or kBFloat16; `op` is Sum, Min, Max or Product.
  MPI_Datatype datatype(DataType dtype) const;
  MPI_Op op(DataType dtype, ReduceOp op) const;

 private:
  void release() noexcept;

  MPI_Datatype datatypes_[kNumHalfTypes];
  MPI_Op ops_[kNumHalfTypes][kNumOps];
};

}  // namespace hvd
