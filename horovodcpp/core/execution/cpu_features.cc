#include "core/execution/cpu_features.h"

#if HVD_F16C_DISPATCH
#include <cpuid.h>

namespace hvd {
namespace {

bool detect_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const unsigned kOsXsave = 1u << 27, kAvx = 1u << 28, kF16c = 1u << 29;
  if ((ecx & (kOsXsave | kAvx | kF16c)) != (kOsXsave | kAvx | kF16c)) return false;
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  return (xcr0_low & 6u) == 6u;
}

bool detect_avx2() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!detect_f16c()) return false;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (ebx & (1u << 5)) != 0;
}

}  // namespace

bool cpu_has_f16c() {
  static const bool has = detect_f16c();
  return has;
}

bool cpu_has_avx2() {
  static const bool has = detect_avx2();
  return has;
}

}  // namespace hvd
#endif
