#include "core/execution/copy_bytes.h"

#include <cstdint>
#include <cstring>

#include "core/execution/cpu_features.h"

#if HVD_F16C_DISPATCH
#include <immintrin.h>
#endif

namespace hvd {
namespace {

// Below this, memcpy's own small-copy paths are as fast.
constexpr std::size_t kVectorCopyFrom = 4096;

#if HVD_F16C_DISPATCH
__attribute__((target("avx"))) void copy_avx(unsigned char* d, const unsigned char* s,
                                             std::size_t n) {
  std::size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 64));
    const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 96));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 32), b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 64), c);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 96), e);
  }
  if (i < n) std::memcpy(d + i, s + i, n - i);
}
#endif

}  // namespace

void copy_bytes(void* dst, const void* src, std::size_t bytes) {
#if HVD_F16C_DISPATCH
  const auto misaligned =
      (reinterpret_cast<std::uintptr_t>(dst) ^ reinterpret_cast<std::uintptr_t>(src)) &
      std::uintptr_t{63};
  // cpu_has_f16c: AVX, with the OS saving YMM state.
  if (misaligned != 0 && bytes >= kVectorCopyFrom && cpu_has_f16c()) {
    return copy_avx(static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src),
                    bytes);
  }
#endif
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

}  // namespace hvd
