// Reader for the IDX file format of (Fashion-)MNIST, gzip-compressed.
//
// An IDX file is a big-endian header — two zero bytes, an element-type
// byte (0x08 = unsigned byte), the number of dimensions — followed by one
// 32-bit big-endian size per dimension and the row-major data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mnist {

// An n-dimensional array of bytes read from an IDX file.
struct IdxArray {
  std::vector<std::uint32_t> dims;  // e.g. {60000, 28, 28}
  std::vector<std::uint8_t> data;   // row-major, product(dims) bytes

  // Number of elements per entry of the first dimension (28*28 for images).
  std::size_t row_size() const;
};

// Reads a gzip-compressed (or plain) IDX file of unsigned bytes with
// `expected_ndim` dimensions. Throws std::runtime_error naming the file on a
// missing file, a bad header or a truncated body.
IdxArray read_idx_gz(const std::string& path, std::size_t expected_ndim);

}  // namespace mnist
