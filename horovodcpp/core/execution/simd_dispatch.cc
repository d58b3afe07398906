#include "core/execution/simd_dispatch.h"

#include <type_traits>

#include "base/check.h"
#include "core/execution/cpu_features.h"
#include "core/execution/reduction_kernels.h"

namespace hvd {
namespace elementwise {

const HalfBlockFns& half_block_fns() {
  static const HalfBlockFns fns = [] {
#if HVD_F16C_DISPATCH
    if (cpu_has_f16c()) return HalfBlockFns{half_load_f16c, half_store_f16c};
#endif
    return HalfBlockFns{half_load_generic, half_store_generic};
  }();
  return fns;
}

}  // namespace elementwise

namespace {
using namespace elementwise;

template <typename Elem, typename Op>
void many_portable(void* dst, const void* const* srcs, std::size_t n, std::size_t count) {
  many_kernel<Elem, Op>(dst, srcs, n, count);
}

#if HVD_F16C_DISPATCH
// The same kernel compiled for AVX2: twice the vector width of the x86-64
// baseline (SSE2) for the arithmetic on data that is already in cache.
template <typename Elem, typename Op>
__attribute__((target("avx2,f16c"))) void many_avx2(void* dst, const void* const* srcs,
                                                    std::size_t n, std::size_t count) {
  many_kernel<Elem, Op>(dst, srcs, n, count);
}
#endif

// bool: Sum/Max are OR, Product/Min are AND: on 0/1 values, Max and Min.
template <typename Elem>
ReduceManyFn many_fn(ReduceOp op, bool avx2) {
  (void)avx2;
#if HVD_F16C_DISPATCH
  using Fast = std::conditional_t<std::is_same_v<Elem, Half>, HalfF16c, Elem>;
#define HVD_MANY(OpType) (avx2 ? &many_avx2<Fast, OpType> : &many_portable<Elem, OpType>)
#else
#define HVD_MANY(OpType) (&many_portable<Elem, OpType>)
#endif
  constexpr bool kBool = std::is_same_v<Elem, Bool>;
  switch (op) {
    case ReduceOp::kSum: return kBool ? HVD_MANY(MaxOp) : HVD_MANY(SumOp);
    case ReduceOp::kMin: return HVD_MANY(MinOp);
    case ReduceOp::kMax: return HVD_MANY(MaxOp);
    case ReduceOp::kProduct: return kBool ? HVD_MANY(MinOp) : HVD_MANY(ProductOp);
    case ReduceOp::kAverage:
      HVD_THROW(InvalidArgument, "reduce_many: Average is a Sum followed by scale_in_place");
    case ReduceOp::kAdasum: HVD_THROW(InvalidArgument, "reduce_many: Adasum is not element-wise");
  }
#undef HVD_MANY
  HVD_THROW(InvalidArgument, "reduce_many: unknown ReduceOp " << static_cast<int>(op));
}

}  // namespace

ReduceManyFn pick_reduce_many(DataType dtype, ReduceOp op, bool avx2) {
  switch (dtype) {
    case DataType::kUInt8: return many_fn<Plain<std::uint8_t>>(op, avx2);
    case DataType::kInt8: return many_fn<Plain<std::int8_t>>(op, avx2);
    case DataType::kUInt16: return many_fn<Plain<std::uint16_t>>(op, avx2);
    case DataType::kInt16: return many_fn<Plain<std::int16_t>>(op, avx2);
    case DataType::kInt32: return many_fn<Plain<std::int32_t>>(op, avx2);
    case DataType::kInt64: return many_fn<Plain<std::int64_t>>(op, avx2);
    case DataType::kFloat16: return many_fn<Half>(op, avx2);
    case DataType::kBFloat16: return many_fn<BFloat16>(op, avx2);
    case DataType::kFloat32: return many_fn<Plain<float>>(op, avx2);
    case DataType::kFloat64: return many_fn<Plain<double>>(op, avx2);
    case DataType::kBool: return many_fn<Bool>(op, avx2);
  }
  HVD_THROW(InvalidArgument, "reduce_many: unknown DataType " << static_cast<int>(dtype));
}

bool use_avx2_kernels() {
#if HVD_F16C_DISPATCH
  return cpu_has_avx2();
#else
  return false;
#endif
}

}  // namespace hvd
