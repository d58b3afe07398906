#include "backend/shm/shm_backend.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "backend/shm/shm_setup.h"
#include "base/check.h"
#include "core/diagnostics/logging.h"
#include "core/diagnostics/peer_failure.h"
#include "core/execution/copy_bytes.h"
#include "core/execution/reduction.h"
#include "core/negotiation/root_decides.h"
#include "core/runtime/usable_cpus.h"
#include "settings/settings.h"

namespace hvd {
namespace {

// Up to this many bytes over all ranks' copies, reading every copy costs
// less than the second wait of the shared reduction (4 B-4 KiB at 2 ranks:
// 0.53-1.11 us against 0.63-1.33 us; at 64 KiB it costs 10-15% more;
// bench/backend_bench).
constexpr std::size_t kReducedEverywhereBytes = 8 << 10;

std::uint64_t chunks_of(std::size_t bytes, std::size_t chunk_bytes) {
  return (bytes + chunk_bytes - 1) / chunk_bytes;
}

}  // namespace

ShmOptions ShmOptions::from_environment() {
  ShmOptions options;
  options.timeout = peer_timeout(settings::Setting::kShmTimeoutSeconds);
  const long long slot = settings::read_int(settings::Setting::kShmSlotBytes);
  HVD_CHECK(slot % 4096 == 0, InvalidArgument,
            "HOROVODCPP_SHM_SLOT_BYTES=" << slot << " is not a multiple of 4096");
  options.slot_bytes = static_cast<std::size_t>(slot);
  return options;
}

ShmBackend::ShmBackend(std::unique_ptr<Backend> inner, Controller& controller,
                       const ShmOptions& options)
    : ForwardingBackend(std::move(inner)), controller_(controller) {
  HVD_CHECK(inner_ != nullptr, InvalidArgument, "ShmBackend needs an inner backend");
  const Topology& topology = controller.topology();
  rank_ = topology.rank;
  size_ = topology.size;
  HVD_CHECK(topology.local_size == topology.size, InvalidArgument,
            "shm: the ranks span " << topology.cross_size << " hosts; shared memory needs one");

  shm::SharedSegment shared =
      shm::share_segment(controller, options.slot_bytes, options.stages, inner_->name());
  segment_ = std::move(shared.segment);
  segment_name_ = std::move(shared.name);
  if (!segment_.mapped()) return;  // everything goes to `inner`
  shm::WaitPolicy policy;
  policy.timeout = options.timeout;
  policy.spin = size_ <= usable_cpus();
  pipeline_ = std::make_unique<shm::ChunkPipeline>(segment_, rank_, policy);
  sources_.resize(size_);
  HVD_LOG(Debug) << "shm: " << size_ << " ranks share " << segment_.geometry().total_bytes()
                 << " bytes (" << segment_.geometry().stages << " stages of "
                 << segment_.geometry().slot_bytes << "-byte slots)";
}

BackendCapabilities ShmBackend::capabilities() const {
  if (!active()) return inner_->capabilities();
  BackendCapabilities capabilities;
  capabilities.half_reduction_in_float32 = false;
  capabilities.reducescatter_keeps_input = true;  // reads `buffer`, reduces into the segment
  return capabilities;
}

void ShmBackend::allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) {
  allreduce_scaled(buffer, count, dtype, op, 1.0, 1.0);  // scaling by 1 is skipped
}

void ShmBackend::allreduce_in_lane(void* buffer, std::size_t count, DataType dtype, ReduceOp op,
                                   int lane) {
  if (!active()) return inner_->allreduce_in_lane(buffer, count, dtype, op, lane);
  Backend::allreduce_in_lane(buffer, count, dtype, op, lane);
}

void ShmBackend::allreduce_scaled(void* buffer, std::size_t count, DataType dtype, ReduceOp op,
                                  double divisor, double factor) {
  check_backend_dtype(dtype);
  check_backend_reduce_op("shm", op);
  if (!active()) return inner_->allreduce_scaled(buffer, count, dtype, op, divisor, factor);
  auto* bytes = static_cast<unsigned char*>(buffer);
  reduce_chunks("allreduce", bytes, count, dtype, op, 0, count, bytes, divisor, factor);
}

void ShmBackend::reducescatter(void* buffer, void* output, const std::vector<std::size_t>& counts,
                               DataType dtype, ReduceOp op) {
  check_backend_dtype(dtype);
  check_backend_reduce_op("shm", op);
  HVD_CHECK_EQ(counts.size(), static_cast<std::size_t>(size_), InvalidArgument,
               "reducescatter needs one count per rank");
  if (!active()) return inner_->reducescatter(buffer, output, counts, dtype, op);
  std::size_t total = 0, my_offset = 0;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) my_offset = total;
    total += counts[r];
  }
  reduce_chunks("reducescatter", static_cast<unsigned char*>(buffer), total, dtype, op, my_offset,
                my_offset + counts[rank_], static_cast<unsigned char*>(output));
}

void ShmBackend::reduce_chunks(const char* what, unsigned char* buffer, std::size_t count,
                               DataType dtype, ReduceOp op, std::size_t keep_begin,
                               std::size_t keep_end, unsigned char* out, double divisor,
                               double factor) {
  const std::size_t element = dtype_size(dtype);
  const std::size_t chunk = segment_.geometry().slot_bytes / element;  // elements per chunk
  if (count > 0 && count <= chunk &&
      count * element * static_cast<std::size_t>(size_) <= kReducedEverywhereBytes) {
    // Small: every rank copies its whole tensor in and reduces every slot
    // itself, in rank order (so every rank computes the same bits): one
    // wait for the others instead of two.
    auto fill_whole = [&](std::uint64_t, int stage) {
      copy_bytes(segment_.slot(stage, rank_), buffer, count * element);
    };
    auto reduce_whole = [&](std::uint64_t, int stage) {
      for (int r = 0; r < size_; ++r) sources_[r] = segment_.slot(stage, r) + keep_begin * element;
      reduce_many(dtype, op, out, sources_.data(), sources_.size(), keep_end - keep_begin);
      scale_in_place(dtype, out, keep_end - keep_begin, divisor, factor);
    };
    run_pipeline(
        what, 1, /*reduces=*/false, fill_whole, [](std::uint64_t, int) {}, reduce_whole);
    return;
  }
  // Shares start on cache lines: no two ranks write to one line of a slot.
  const std::size_t align = std::max<std::size_t>(1, shm::kCacheLine / element);
  const int size = size_;
  // First element (within a chunk of m) of rank r's share.
  auto share = [size, align](std::size_t m, int r) {
    return r == size ? m : m * static_cast<std::size_t>(r) / size / align * align;
  };
  auto length = [count, chunk](std::uint64_t c) { return std::min(chunk, count - c * chunk); };

  // Everything but this rank's own share: that one it reads from `buffer`.
  auto fill = [&](std::uint64_t c, int stage) {
    const std::size_t m = length(c), lo = share(m, rank_), hi = share(m, rank_ + 1);
    const unsigned char* from = buffer + c * chunk * element;
    unsigned char* slot = segment_.slot(stage, rank_);
    copy_bytes(slot, from, lo * element);
    copy_bytes(slot + hi * element, from + hi * element, (m - hi) * element);
  };
  auto reduce = [&](std::uint64_t c, int stage) {
    const std::size_t m = length(c), lo = share(m, rank_), hi = share(m, rank_ + 1);
    if (hi == lo) return;
    for (int r = 0; r < size; ++r) {
      sources_[r] =
          r == rank_ ? buffer + (c * chunk + lo) * element : segment_.slot(stage, r) + lo * element;
    }
    unsigned char* result = segment_.slot(stage, rank_) + lo * element;
    reduce_many(dtype, op, result, sources_.data(), sources_.size(), hi - lo);
    scale_in_place(dtype, result, hi - lo, divisor, factor);  // no-op for 1, 1
  };
  // Every rank's share of the result that falls in [keep_begin, keep_end).
  auto drain = [&](std::uint64_t c, int stage) {
    const std::size_t begin = c * chunk, m = length(c);
    for (int r = 0; r < size; ++r) {
      const std::size_t lo = std::max(begin + share(m, r), keep_begin);
      const std::size_t hi = std::min(begin + share(m, r + 1), keep_end);
      if (lo >= hi) continue;
      copy_bytes(out + (lo - keep_begin) * element,
                 segment_.slot(stage, r) + (lo - begin) * element, (hi - lo) * element);
    }
  };
  run_pipeline(what, chunks_of(count, chunk), /*reduces=*/true, fill, reduce, drain);
}

void ShmBackend::broadcast(void* buffer, std::size_t count, DataType dtype, int root) {
  check_backend_dtype(dtype);
  HVD_CHECK(root >= 0 && root < size_, InvalidArgument,
            "broadcast root " << root << " is not a rank of a job of size " << size_);
  if (!active()) return inner_->broadcast(buffer, count, dtype, root);
  if (size_ == 1) return;
  // The root fills a whole stage (every rank's slot of it) per chunk.
  auto* bytes = static_cast<unsigned char*>(buffer);
  const std::size_t total = count * dtype_size(dtype);
  const std::size_t chunk = segment_.geometry().slot_bytes * size_;
  auto length = [total, chunk](std::uint64_t c) { return std::min(chunk, total - c * chunk); };
  auto fill = [&](std::uint64_t c, int stage) {
    if (rank_ == root) copy_bytes(segment_.slot(stage, 0), bytes + c * chunk, length(c));
  };
  auto drain = [&](std::uint64_t c, int stage) {
    if (rank_ != root) copy_bytes(bytes + c * chunk, segment_.slot(stage, 0), length(c));
  };
  run_pipeline(
      "broadcast", chunks_of(total, chunk), /*reduces=*/false, fill, [](std::uint64_t, int) {},
      drain);
}

void ShmBackend::allgatherv(const void* input, void* output, const std::vector<std::size_t>& counts,
                            DataType dtype) {
  check_backend_dtype(dtype);
  HVD_CHECK_EQ(counts.size(), static_cast<std::size_t>(size_), InvalidArgument,
               "allgatherv needs one count per rank");
  if (!active()) return inner_->allgatherv(input, output, counts, dtype);
  const std::size_t element = dtype_size(dtype);
  auto* out = static_cast<unsigned char*>(output);
  const auto* in = static_cast<const unsigned char*>(input);
  std::vector<std::size_t>& offsets = offsets_;  // bytes
  offsets.assign(size_ + 1, 0);
  std::size_t largest = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[r + 1] = offsets[r] + counts[r] * element;
    largest = std::max(largest, counts[r] * element);
  }
  const std::size_t mine = counts[rank_] * element;
  if (mine > 0 && in != out + offsets[rank_]) std::memcpy(out + offsets[rank_], in, mine);
  // Chunk c of rank r is bytes [c * slot, (c + 1) * slot) of its part.
  const std::size_t slot = segment_.geometry().slot_bytes;
  auto piece = [slot](std::size_t bytes, std::uint64_t c) {
    return c * slot >= bytes ? 0 : std::min(slot, bytes - c * slot);
  };
  auto fill = [&](std::uint64_t c, int stage) {
    const std::size_t bytes = piece(mine, c);
    if (bytes > 0) copy_bytes(segment_.slot(stage, rank_), in + c * slot, bytes);
  };
  auto drain = [&](std::uint64_t c, int stage) {
    for (int r = 0; r < size_; ++r) {
      const std::size_t bytes = piece(offsets[r + 1] - offsets[r], c);
      if (r == rank_ || bytes == 0) continue;
      copy_bytes(out + offsets[r] + c * slot, segment_.slot(stage, r), bytes);
    }
  };
  run_pipeline(
      "allgatherv", chunks_of(largest, slot), /*reduces=*/false, fill, [](std::uint64_t, int) {},
      drain);
}

void ShmBackend::abandon(const std::string& reason) {
  if (active()) pipeline_->give_up(reason.c_str());
}

bool shm_agreed(Controller& controller) {
  return root_decides(controller, settings::read_bool(settings::Setting::kShm));
}

std::unique_ptr<Backend> maybe_use_shm(std::unique_ptr<Backend> backend, Controller& controller) {
  const Topology& topology = controller.topology();
  if (topology.size < 2 || topology.local_size != topology.size) return backend;
  if (!shm_agreed(controller)) return backend;
  return std::make_unique<ShmBackend>(std::move(backend), controller);
}

}  // namespace hvd
