// FlightRecorder: the last N collectives of this rank, always on, for the
// dump that says afterwards what each rank was doing when a job hung or
// died (docs/faults.md, "Flight recorder").
//
// A record is made when a collective is submitted (any thread; its number
// travels in Request::flight_number) and then written only by the
// coordinator of its process set: picked up by a cycle, agreed and
// launched in a batch on a backend, completed or failed. The ring is
// allocated once; a collective costs a slot's stores and no allocation.
// write() reads it from any thread without a lock (each slot is a
// sequence lock: a slot being rewritten meanwhile is skipped), so a dump
// works while the coordinator is stuck inside a collective.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "horovodcpp/types.h"

namespace hvd {

class FlightRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  // HOROVODCPP_FLIGHT_RECORDER_SIZE (default 4096 records; 0: off).
  static std::size_t capacity_from_env();

  explicit FlightRecorder(std::size_t capacity);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  std::size_t capacity() const { return capacity_; }

  // What a record says of its collective.
  struct Collective {
    const std::string& name;
    const char* op;  // "allreduce", ... (a static string)
    ReduceOp reduce_op;
    DataType dtype;
    DeviceType device;
    const std::vector<std::int64_t>& shape;
    std::int32_t set_id;  // its process set
  };
  // A new record of a submitted collective; returns its number (from 1),
  // to pass to the calls below.
  std::uint64_t start(const Collective& collective);
  // Picked up by a cycle of its coordinator: "submitted" in the dump.
  void seen(std::uint64_t number, Clock::time_point cycle);
  // Agreed in the cycle that began at `agreed`, launched at `now` in a
  // fusion batch (named by the number of its first record) on `backend`
  // (intern()'s).
  void launched(std::uint64_t number, std::uint64_t batch, const char* backend,
                Clock::time_point agreed, Clock::time_point now);
  void completed(std::uint64_t number, Clock::time_point now);
  void failed(std::uint64_t number, const std::string& error, Clock::time_point now);
  // A lasting copy of `name` (a backend's, which may go before the ring):
  // what launched() takes. Not for every collective: it locks.
  const char* intern(const std::string& name);

  // The records still in the ring, oldest first, one a line (the dump's
  // body; the format is documented in docs/faults.md). Any thread, no lock.
  void write(std::ostream& out) const;

 private:
  struct Slot;
  Slot* slot_of(std::uint64_t number) const;

  const std::size_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<std::uint64_t> next_{0};
  std::mutex names_mutex_;
  std::deque<std::string> names_;  // intern()'s (a deque: its strings never move)
  // steady_clock and system_clock at construction: records keep steady
  // times, the dump shows wall-clock ones.
  const Clock::time_point steady_origin_;
  const std::chrono::system_clock::time_point wall_origin_;
};

}  // namespace hvd
