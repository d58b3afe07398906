// MPI user ops for what MPI's built-ins lack or get wrong:
// - float16/bfloat16 have no MPI type in Open MPI 4: 2-byte datatypes and
//   user ops for every reduction.
// - Sum and Product of 8- and 16-bit integers: Open MPI 4.1's AVX op
//   component saturates instead of wrapping around (open-mpi/ompi#8045).
// All of them call reduce_into, whose semantics are documented in types.h.
#pragma once

#include "backend/mpi/mpi_check.h"
#include "horovodcpp/types.h"

namespace hvd {

// Creates the datatypes and ops on construction (MPI must be initialized)
// and frees them on destruction (unless MPI is already finalized).
class MpiUserOps {
 public:
  MpiUserOps();
  ~MpiUserOps();
  MpiUserOps(const MpiUserOps&) = delete;
  MpiUserOps& operator=(const MpiUserOps&) = delete;

  // `dtype` is kFloat16 or kBFloat16.
  MPI_Datatype half_datatype(DataType dtype) const;
  // The user op for (dtype, op), or MPI_OP_NULL where MPI's built-in is right.
  // `op` is Sum, Min, Max or Product.
  MPI_Op op(DataType dtype, ReduceOp op) const;

 private:
  static constexpr int kNumOps = 4;  // Sum, Min, Max, Product: ReduceOp minus Average
  void release() noexcept;

  MPI_Datatype half_datatypes_[2] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
  MPI_Op ops_[kNumDataTypes][kNumOps];
};

}  // namespace hvd
