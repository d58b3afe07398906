// Which vector instructions this CPU offers, for the runtime dispatch of the
// reduction kernels (simd_dispatch.cc) and of copy_bytes. Each is detected
// once.
#pragma once

// x86 with GCC or Clang compiles AVX2/F16C variants of the kernels beside the
// portable ones. -DHVD_F16C_DISPATCH=0 builds the portable path only (to
// test it on x86).
#ifndef HVD_F16C_DISPATCH
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define HVD_F16C_DISPATCH 1
#else
#define HVD_F16C_DISPATCH 0
#endif
#endif

namespace hvd {

#if HVD_F16C_DISPATCH
// AVX and F16C, with the OS saving YMM state (VEX code needs it).
bool cpu_has_f16c();
// AVX2 on top of cpu_has_f16c().
bool cpu_has_avx2();
#endif

}  // namespace hvd
