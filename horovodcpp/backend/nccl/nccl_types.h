// DataType and ReduceOp as NCCL spells them.
#pragma once

#include <nccl.h>

#include <cstddef>

#include "horovodcpp/types.h"

namespace hvd {

// For reductions: NCCL's type of `dtype` (bool as uint8). Throws
// InvalidArgument for int16/uint16, which NCCL lacks.
ncclDataType_t nccl_reduction_type(DataType dtype);
// For data movement: an NCCL type of the same size and the element count
// in it (int16/uint16 move as two uint8 each).
ncclDataType_t nccl_movement_type(DataType dtype, std::size_t& count);
// Sum, Min, Max, Product; bool's Sum is OR (Max) and Product is AND (Min).
ncclRedOp_t nccl_op(ReduceOp op, DataType dtype);

}  // namespace hvd
