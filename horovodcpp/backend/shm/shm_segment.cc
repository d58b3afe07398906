#include "backend/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "base/check.h"

namespace hvd {
namespace shm {
namespace {

constexpr std::uint64_t kMagic = 0x6876646370707368ull;  // "hvdcppsh"
constexpr std::uint32_t kVersion = 2;
constexpr std::size_t kPage = 4096;

std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::string os_error(const char* what, const std::string& name) {
  return std::string(what) + " " + name + ": " + std::strerror(errno);
}

// Closes the descriptor whatever happens: the mapping keeps the memory.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

void* map(int fd, std::size_t bytes, const std::string& name) {
  // MAP_POPULATE: the page faults happen here, not in the first collective.
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  HVD_CHECK(base != MAP_FAILED, BackendError, os_error("shm: cannot map", name));
  return base;
}

}  // namespace

std::size_t Geometry::records_offset() const { return round_up(sizeof(Header), kCacheLine); }

std::size_t Geometry::data_offset() const {
  return round_up(records_offset() + sizeof(RankRecord) * static_cast<std::size_t>(ranks), kPage);
}

std::size_t Geometry::total_bytes() const {
  return data_offset() +
         slot_bytes * static_cast<std::size_t>(ranks) * static_cast<std::size_t>(stages);
}

ShmSegment ShmSegment::create(const std::string& name, const Geometry& geometry) {
  HVD_CHECK(geometry.ranks >= 1 && geometry.stages >= 1 && geometry.slot_bytes >= kCacheLine &&
                geometry.slot_bytes % kCacheLine == 0,
            InvalidArgument,
            "shm: bad geometry (" << geometry.ranks << " ranks, " << geometry.stages
                                  << " stages, slots of " << geometry.slot_bytes << " bytes)");
  Fd fd(::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600));
  HVD_CHECK(fd.get() >= 0, BackendError, os_error("shm: cannot create", name));
  const std::size_t bytes = geometry.total_bytes();
  // posix_fallocate returns the error instead of setting errno.
  const int reserve_error = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes));
  if (reserve_error != 0) {
    ::shm_unlink(name.c_str());
    HVD_THROW(BackendError, "shm: cannot reserve " << bytes << " bytes for " << name << ": "
                                                   << std::strerror(reserve_error)
                                                   << " (is /dev/shm large enough?)");
  }
  void* base = nullptr;
  try {
    base = map(fd.get(), bytes, name);
  } catch (...) {
    ::shm_unlink(name.c_str());
    throw;
  }
  // The memory is zero-filled: construct the atomics in place, then the header.
  ShmSegment segment(base, geometry);
  Header* header = new (base) Header{};
  header->magic = kMagic;
  header->version = kVersion;
  header->ranks = geometry.ranks;
  header->slot_bytes = geometry.slot_bytes;
  header->stages = geometry.stages;
  header->total_bytes = bytes;
  header->doorbell.rings.store(0, std::memory_order_relaxed);
  header->doorbell.sleepers.store(0, std::memory_order_relaxed);
  header->failed_rank.store(-1, std::memory_order_relaxed);
  header->failed_reason_ready.store(0, std::memory_order_relaxed);
  for (int r = 0; r < geometry.ranks; ++r) {
    RankRecord* record = new (&segment.record(r)) RankRecord{};
    for (PaddedCounter& counter : record->counters) counter.value.store(0);
  }
  return segment;
}

ShmSegment ShmSegment::open(const std::string& name, const Geometry& geometry) {
  Fd fd(::shm_open(name.c_str(), O_RDWR, 0600));
  HVD_CHECK(fd.get() >= 0, BackendError, os_error("shm: cannot open", name));
  struct stat info = {};
  HVD_CHECK(::fstat(fd.get(), &info) == 0, BackendError, os_error("shm: cannot stat", name));
  const std::size_t bytes = geometry.total_bytes();
  HVD_CHECK_EQ(static_cast<std::size_t>(info.st_size), bytes, BackendError,
               "shm: " << name << " has an unexpected size");
  ShmSegment segment(map(fd.get(), bytes, name), geometry);
  const Header& header = segment.header();
  const bool matches = header.magic == kMagic && header.version == kVersion &&
                       header.ranks == geometry.ranks && header.slot_bytes == geometry.slot_bytes &&
                       header.stages == geometry.stages && header.total_bytes == bytes;
  HVD_CHECK(matches, BackendError, "shm: " << name << " is not the segment rank 0 created");
  return segment;
}

void ShmSegment::unlink(const std::string& name) {
  HVD_CHECK(::shm_unlink(name.c_str()) == 0 || errno == ENOENT, BackendError,
            os_error("shm: cannot unlink", name));
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), geometry_(other.geometry_) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) ::munmap(base_, geometry_.total_bytes());
    base_ = std::exchange(other.base_, nullptr);
    geometry_ = other.geometry_;
  }
  return *this;
}

ShmSegment::~ShmSegment() {
  if (base_ != nullptr) ::munmap(base_, geometry_.total_bytes());
}

RankRecord& ShmSegment::record(int rank) const {
  return reinterpret_cast<RankRecord*>(static_cast<unsigned char*>(base_) +
                                       geometry_.records_offset())[rank];
}

unsigned char* ShmSegment::slot(int stage, int rank) const {
  const std::size_t index = static_cast<std::size_t>(stage) * geometry_.ranks + rank;
  return static_cast<unsigned char*>(base_) + geometry_.data_offset() +
         index * geometry_.slot_bytes;
}

}  // namespace shm
}  // namespace hvd
