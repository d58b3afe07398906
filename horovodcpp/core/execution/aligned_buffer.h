// A growable scratch buffer whose bytes start on a page boundary.
// Large std::vector storage starts 16 bytes into a page (glibc's header of
// an mmap'd block), so copies between it and page-aligned memory (the
// shared-memory slots) are misaligned to each other by 16 bytes mod 64,
// which makes memcpy several times slower on some CPUs (AMD EPYC, 2 ranks:
// 1.3 GB/s busbw from 256 KiB to 64 MiB, against 4-9 GB/s when aligned).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace hvd {

class AlignedBuffer {
 public:
  static constexpr std::size_t kAlignment = 4096;

  unsigned char* data() { return data_.get(); }
  std::size_t size() const { return size_; }

  // Makes room for at least `bytes`; what the buffer held is not kept when
  // it grows (it is scratch, refilled by every use).
  void grow_discarding(std::size_t bytes) {
    if (bytes <= size_) return;
    const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    data_.reset(static_cast<unsigned char*>(std::aligned_alloc(kAlignment, rounded)));
    if (!data_) {
      size_ = 0;
      throw std::bad_alloc();
    }
    size_ = rounded;
  }

 private:
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, Free> data_;
  std::size_t size_ = 0;
};

}  // namespace hvd
