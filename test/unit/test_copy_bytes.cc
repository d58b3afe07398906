// copy_bytes copies exactly what memcpy does, for every mutual alignment of
// source and destination and lengths around its vector loop's steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/execution/copy_bytes.h"

namespace hvd {
namespace {

TEST(CopyBytes, MatchesMemcpyAtEveryAlignment) {
  std::vector<unsigned char> source(3 * 4096 + 256), target(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<unsigned char>(i * 7 + 3);
  const std::size_t lengths[] = {0, 1, 127, 128, 4095, 4096, 4097, 4096 + 127, 2 * 4096 + 129};
  for (std::size_t src_offset : {0, 1, 16, 63, 64}) {
    for (std::size_t dst_offset : {0, 8, 16, 48}) {
      for (std::size_t n : lengths) {
        std::fill(target.begin(), target.end(), 0xAB);
        copy_bytes(target.data() + dst_offset, source.data() + src_offset, n);
        for (std::size_t i = 0; i < target.size(); ++i) {
          const bool inside = i >= dst_offset && i < dst_offset + n;
          const unsigned char expected = inside ? source[src_offset + i - dst_offset] : 0xAB;
          ASSERT_EQ(target[i], expected)
              << "src+" << src_offset << " dst+" << dst_offset << " n=" << n << " byte " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hvd
