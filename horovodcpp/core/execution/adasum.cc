#include "core/execution/adasum.h"

#include <algorithm>

#include "base/check.h"

namespace hvd {
namespace {

// Elements [begin, begin + count) of the buffer.
struct Segment {
  std::size_t begin = 0;
  std::size_t count = 0;
  std::size_t end() const { return begin + count; }
};

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// Horovod's rule: a vector of (almost) zero norm keeps coefficient 1.
double coefficient(double dot, double norm2) {
  return norm2 >= 1e-8 ? 1.0 - dot / norm2 * 0.5 : 1.0;
}

// Adds a.b, |a|^2 and |b|^2 of n elements to out[0..3), in double. Four
// accumulators each, always in the same order, so the sums are the same
// wherever they are computed.
template <typename T>
void add_dot_and_norms(const T* a, const T* b, std::size_t n, double* out) {
  double dot[4] = {}, aa[4] = {}, bb[4] = {};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) {
      const double x = a[i + k], y = b[i + k];
      dot[k] += x * y;
      aa[k] += x * x;
      bb[k] += y * y;
    }
  }
  for (; i < n; ++i) {
    const double x = a[i], y = b[i];
    dot[0] += x * y;
    aa[0] += x * x;
    bb[0] += y * y;
  }
  out[0] += (dot[0] + dot[1]) + (dot[2] + dot[3]);
  out[1] += (aa[0] + aa[1]) + (aa[2] + aa[3]);
  out[2] += (bb[0] + bb[1]) + (bb[2] + bb[3]);
}

// a = ca * a + cb * b, computed in double and rounded once to T.
template <typename T>
void scaled_add(T* a, double ca, const T* b, double cb, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<T>(ca * a[i] + cb * b[i]);
}

}  // namespace

AdasumReducer::AdasumReducer(Backend& backend, int rank, int size)
    : backend_(backend), rank_(rank), size_(size) {}

void AdasumReducer::allreduce(void* buffer, const std::vector<std::size_t>& counts,
                              DataType dtype) {
  HVD_CHECK(is_power_of_two(size_), InvalidArgument,
            "Adasum needs a power-of-two number of ranks, not " << size_);
  switch (dtype) {
    case DataType::kFloat32: return run(static_cast<float*>(buffer), counts);
    case DataType::kFloat64: return run(static_cast<double*>(buffer), counts);
    default:
      HVD_THROW(InvalidArgument,
                "Adasum runs on float32 or float64 buffers, not " << dtype_name(dtype));
  }
}

template <typename T>
void AdasumReducer::run(T* buffer, const std::vector<std::size_t>& counts) {
  const std::size_t tensors = counts.size();
  std::vector<std::size_t> starts(tensors);
  std::size_t total = 0;
  for (std::size_t t = 0; t < tensors; ++t) {
    starts[t] = total;
    total += counts[t];
  }
  if (total == 0 || size_ == 1) return;  // nothing to exchange (counts agree on every rank)
  // The kept half is at most ceil(total / 2) elements.
  received_.resize(std::max(received_.size(), (total + 1) / 2 * sizeof(T)));
  T* received = reinterpret_cast<T*>(received_.data());

  // Reduce-scatter: at level L this rank and rank ^ L hold the same segment,
  // combined over their subtrees of L ranks each. The left one (bit L clear)
  // keeps the first half, the right one the second; each sends the other
  // half and combines what it keeps with what it receives.
  std::vector<Segment> held;  // the segment held before each level
  Segment mine{0, total};
  for (int level = 1; level < size_; level <<= 1) {
    const bool left = (rank_ & level) == 0;
    const std::size_t half = mine.count / 2;
    const Segment first{mine.begin, half}, second{mine.begin + half, mine.count - half};
    const Segment keep = left ? first : second, give = left ? second : first;
    backend_.sendrecv(buffer + give.begin, give.count, received, keep.count, dtype_of<T>(),
                      rank_ ^ level);
    // Tensor t's elements in `keep` (possibly none).
    auto piece = [&](std::size_t t) {
      const std::size_t from = std::max(starts[t], keep.begin);
      const std::size_t to = std::min(starts[t] + counts[t], keep.end());
      return from < to ? Segment{from, to - from} : Segment{};
    };

    // Per tensor: dot product and norms of the left and right subtrees'
    // vectors, summed over every rank holding a piece of them.
    partials_.assign(3 * tensors, 0.0);
    for (std::size_t t = 0; t < tensors; ++t) {
      const Segment p = piece(t);
      if (p.count == 0) continue;
      const T* own = buffer + p.begin;
      const T* other = received + (p.begin - keep.begin);
      add_dot_and_norms(left ? own : other, left ? other : own, p.count, &partials_[3 * t]);
    }
    sum_over_group(partials_, level);
    for (std::size_t t = 0; t < tensors; ++t) {
      const Segment p = piece(t);
      if (p.count == 0) continue;
      const double dot = partials_[3 * t];
      const double left_coefficient = coefficient(dot, partials_[3 * t + 1]);
      const double right_coefficient = coefficient(dot, partials_[3 * t + 2]);
      scaled_add(buffer + p.begin, left ? left_coefficient : right_coefficient,
                 received + (p.begin - keep.begin), left ? right_coefficient : left_coefficient,
                 p.count);
    }
    held.push_back(mine);
    mine = keep;
  }

  // Allgather: undo the halvings in reverse, each pair swapping its segments.
  for (int level = size_ / 2; level >= 1; level >>= 1) {
    const Segment whole = held.back();
    held.pop_back();
    const std::size_t other_count = whole.count - mine.count;
    const bool left = (rank_ & level) == 0;  // kept the first half
    const Segment other =
        left ? Segment{mine.end(), other_count} : Segment{whole.begin, other_count};
    backend_.sendrecv(buffer + mine.begin, mine.count, buffer + other.begin, other.count,
                      dtype_of<T>(), rank_ ^ level);
    mine = whole;
  }
}

// Recursive doubling: after the exchange with rank ^ j for j = 1, 2, ...,
// level, every rank of the group holds the group's sum. x + y == y + x, so
// both partners of each step hold the same bits, and so does the group.
void AdasumReducer::sum_over_group(std::vector<double>& values, int level) {
  peer_partials_.resize(values.size());
  for (int j = 1; j <= level; j <<= 1) {
    backend_.sendrecv(values.data(), values.size(), peer_partials_.data(), values.size(),
                      DataType::kFloat64, rank_ ^ j);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] += peer_partials_[i];
  }
}

}  // namespace hvd
