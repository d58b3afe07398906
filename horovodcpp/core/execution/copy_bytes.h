// memcpy for the data path's large copies between buffers whose addresses
// differ mod 64 (a std::vector's storage, 16 bytes into a page, and a
// page-aligned shared-memory slot): glibc's memcpy copies those with
// `rep movsb`, which some CPUs run several times slower when source and
// destination are misaligned to each other (AMD EPYC: a 2-rank
// shared-memory allreduce of such a buffer at 1.3-2.0 GB/s busbw, 2.6-5.8
// with this copy). Aligned pairs and small copies go to memcpy.
#pragma once

#include <cstddef>

namespace hvd {

void copy_bytes(void* dst, const void* src, std::size_t bytes);

}  // namespace hvd
