// The Adasum reference of the C++ suites (unit/test_adasum.cc,
// mpi/test_adasum.cc): Horovod's definition in double arithmetic.
#pragma once

#include <cstddef>
#include <vector>

namespace adasum_reference {

// (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b, a coefficient being 1
// where its vector's squared norm is below 1e-8.
inline std::vector<double> combine(const std::vector<double>& a, const std::vector<double>& b) {
  double dot = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  const double ca = aa >= 1e-8 ? 1 - dot / (2 * aa) : 1;
  const double cb = bb >= 1e-8 ? 1 - dot / (2 * bb) : 1;
  std::vector<double> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = ca * a[i] + cb * b[i];
  return out;
}

// inputs[first .. first + n) (n a power of two) combined pairwise up a
// binary tree, neighbours first.
inline std::vector<double> adasum(const std::vector<std::vector<double>>& inputs, std::size_t first,
                                  std::size_t n) {
  if (n == 1) return inputs[first];
  return combine(adasum(inputs, first, n / 2), adasum(inputs, first + n / 2, n / 2));
}

}  // namespace adasum_reference
