#include "idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>

namespace mnist {
namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly `size` bytes or throws.
void read_exact(gzFile file, const std::string& path, void* out, std::size_t size) {
  auto* dst = static_cast<unsigned char*>(out);
  while (size > 0) {
    const unsigned chunk =
        static_cast<unsigned>(std::min<std::size_t>(size, std::numeric_limits<int>::max() / 2));
    const int got = gzread(file, dst, chunk);
    if (got <= 0) {
      int errnum = 0;
      const char* msg = gzerror(file, &errnum);
      throw std::runtime_error(path + ": truncated or unreadable IDX file" +
                               (errnum != Z_OK && msg ? std::string(" (") + msg + ")" : ""));
    }
    dst += got;
    size -= static_cast<std::size_t>(got);
  }
}

std::uint32_t big_endian_u32(const unsigned char* bytes) {
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
         (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
}

}  // namespace

std::size_t IdxArray::row_size() const {
  std::size_t n = 1;
  for (std::size_t i = 1; i < dims.size(); ++i) n *= dims[i];
  return n;
}

IdxArray read_idx_gz(const std::string& path, std::size_t expected_ndim) {
  errno = 0;
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file) {
    throw std::runtime_error("cannot open " + path + ": " +
                             (errno != 0 ? std::strerror(errno) : "gzopen failed"));
  }

  unsigned char magic[4];
  read_exact(file.get(), path, magic, sizeof(magic));
  if (magic[0] != 0 || magic[1] != 0) {
    throw std::runtime_error(path + ": not an IDX file (bad magic number)");
  }
  if (magic[2] != 0x08) {
    throw std::runtime_error(path + ": unsupported IDX element type " + std::to_string(magic[2]) +
                             " (expected 0x08, unsigned byte)");
  }
  if (magic[3] != expected_ndim) {
    throw std::runtime_error(path + ": expected " + std::to_string(expected_ndim) +
                             " dimensions, found " + std::to_string(magic[3]));
  }

  IdxArray array;
  std::size_t total = 1;
  for (std::size_t i = 0; i < expected_ndim; ++i) {
    unsigned char raw[4];
    read_exact(file.get(), path, raw, sizeof(raw));
    array.dims.push_back(big_endian_u32(raw));
    total *= array.dims.back();
  }
  array.data.resize(total);
  read_exact(file.get(), path, array.data.data(), total);
  return array;
}

}  // namespace mnist
