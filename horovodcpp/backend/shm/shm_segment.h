// ShmSegment: the POSIX shared-memory segment the ranks of one host share,
// and its layout: a header, one record per rank (progress counters and the
// process identity others check for liveness), then the data slots, one per
// (pipeline stage, rank). Every rank writes only its own record and slots;
// everything another rank reads is published through the counters
// (release/acquire), so no lock is ever taken across processes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hvd {
namespace shm {

constexpr std::size_t kCacheLine = 64;

// A rank's progress through the chunks of all collectives so far (chunk
// numbers run on from one call to the next, so nothing is ever reset):
// chunks it has copied into its slot, reduced its share of, copied out.
enum Counter : int { kFilled = 0, kReduced = 1, kDrained = 2, kNumCounters = 3 };

struct alignas(kCacheLine) PaddedCounter {
  std::atomic<std::uint64_t> value;
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "counters shared between processes must be lock-free");

// Identity of a process that survives pid reuse: the pid and its start time
// (clock ticks after boot, /proc/PID/stat field 22).
struct ProcessId {
  std::int64_t pid = 0;
  std::uint64_t start_time = 0;
};

// A futex word every rank rings after publishing progress: a rank with
// nothing to do sleeps on it in the kernel and wakes at the next ring,
// instead of polling (shm_wait.h). A wait/notify word, not a lock.
struct Doorbell {
  std::atomic<std::uint32_t> rings;
  std::atomic<std::uint32_t> sleepers;  // ranks inside a futex wait now
};
static_assert(sizeof(std::atomic<std::uint32_t>) == 4, "a futex word is 32 bits");

struct RankRecord {
  PaddedCounter counters[kNumCounters];   // each on its own cache line
  alignas(kCacheLine) ProcessId process;  // written once at setup
};

struct Geometry {
  int ranks = 1;
  std::size_t slot_bytes = 0;  // one rank's slot in one pipeline stage
  int stages = 1;              // chunks in flight

  std::size_t records_offset() const;
  std::size_t data_offset() const;
  std::size_t total_bytes() const;
};

struct Header {
  std::uint64_t magic;
  std::uint32_t version;
  std::int32_t ranks;
  std::uint64_t slot_bytes;
  std::int32_t stages;
  std::uint64_t total_bytes;
  // The first rank that gave up on the segment (timeout, dead peer), or -1,
  // and why (valid once failed_reason_ready is 1): the others then fail at
  // once with that cause instead of waiting for their own timeout.
  alignas(kCacheLine) Doorbell doorbell;
  alignas(kCacheLine) std::atomic<std::int32_t> failed_rank;
  std::atomic<std::int32_t> failed_reason_ready;
  char failed_reason[512];
};

class ShmSegment {
 public:
  // Creates the segment `name` ("/hvdcpp-..."), exclusive, with its memory
  // reserved up front (a full /dev/shm is an error here, not a SIGBUS later),
  // and initializes the header and counters. Throws BackendError.
  static ShmSegment create(const std::string& name, const Geometry& geometry);
  // Maps an existing segment and checks its header against `geometry`.
  static ShmSegment open(const std::string& name, const Geometry& geometry);
  // Removes the name; the memory lives on while a process maps it. A name
  // already gone is fine (every rank unlinks; only one call removes it).
  static void unlink(const std::string& name);

  ShmSegment() = default;
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ~ShmSegment();

  bool mapped() const { return base_ != nullptr; }
  const Geometry& geometry() const { return geometry_; }
  Header& header() const { return *static_cast<Header*>(base_); }
  RankRecord& record(int rank) const;
  // The slots of one stage are contiguous in rank order, so a stage is also
  // one buffer of ranks * slot_bytes (broadcast uses it whole).
  unsigned char* slot(int stage, int rank) const;

 private:
  ShmSegment(void* base, const Geometry& geometry) : base_(base), geometry_(geometry) {}

  void* base_ = nullptr;
  Geometry geometry_;
};

}  // namespace shm
}  // namespace hvd
