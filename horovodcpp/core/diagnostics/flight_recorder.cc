#include "core/diagnostics/flight_recorder.h"

#include <algorithm>
#include <cstring>

#include "settings/settings.h"

namespace hvd {
namespace {

enum State : std::uint8_t { kSubmitted, kLaunched, kCompleted, kFailed };
const char* state_name(std::uint8_t state) {
  switch (state) {
    case kLaunched: return "launched";
    case kCompleted: return "completed";
    case kFailed: return "failed";
    default: return "submitted";
  }
}

constexpr std::size_t kNameBytes = 96;
constexpr std::size_t kErrorBytes = 160;
constexpr std::size_t kDims = 4;

// A truncated copy (what a collective pays: no check of the characters).
void copy_field(char* to, std::size_t size, const std::string& from) {
  const std::size_t n = std::min(from.size(), size - 1);
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

// At dump time: text that stays one field of a tab-separated line.
void make_field(char* text) {
  for (char* c = text; *c; ++c) {
    if (*c == '\t' || *c == '\n' || *c == '\r') *c = ' ';
  }
}

std::int64_t nanos(FlightRecorder::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

struct FlightRecorder::Slot {
  // The record's number; 0 while the slot is (re)written (a sequence lock).
  std::atomic<std::uint64_t> number{0};
  char name[kNameBytes] = {};
  char error[kErrorBytes] = {};
  const char* op = "";
  ReduceOp reduce_op = ReduceOp::kSum;
  DataType dtype = DataType::kFloat32;
  DeviceType device = DeviceType::kCPU;
  std::int32_t set_id = 0;
  std::int64_t bytes = 0;
  std::int64_t dims[kDims] = {};
  std::uint8_t ndims = 0;  // more than kDims: shown as "..."
  std::atomic<std::uint8_t> state{kSubmitted};
  std::atomic<std::int64_t> submitted{0}, agreed{0}, launched{0}, done{0};  // steady ns; 0: not yet
  std::atomic<std::uint64_t> batch{0};
  std::atomic<const char*> backend{nullptr};
};

std::size_t FlightRecorder::capacity_from_env() {
  return static_cast<std::size_t>(settings::read_int(settings::Setting::kFlightRecorderSize));
}

FlightRecorder::FlightRecorder(std::size_t capacity)
    : capacity_(std::max<std::size_t>(capacity, 1)),
      slots_(new Slot[capacity_]),
      steady_origin_(Clock::now()),
      wall_origin_(std::chrono::system_clock::now()) {}

FlightRecorder::~FlightRecorder() = default;

FlightRecorder::Slot* FlightRecorder::slot_of(std::uint64_t number) const {
  if (number == 0) return nullptr;
  Slot* slot = &slots_[number % capacity_];
  // Overwritten by a newer record (the ring wrapped): nothing to update.
  return slot->number.load(std::memory_order_relaxed) == number ? slot : nullptr;
}

const char* FlightRecorder::intern(const std::string& name) {
  std::lock_guard<std::mutex> lock(names_mutex_);
  for (const std::string& known : names_) {
    if (known == name) return known.c_str();
  }
  names_.push_back(name);
  return names_.back().c_str();
}

std::uint64_t FlightRecorder::start(const Collective& request) {
  const std::uint64_t number = next_.fetch_add(1, std::memory_order_relaxed) + 1;
  Slot& slot = slots_[number % capacity_];
  slot.number.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  copy_field(slot.name, kNameBytes, request.name);
  slot.error[0] = '\0';
  slot.op = request.op;
  slot.reduce_op = request.reduce_op;
  slot.dtype = request.dtype;
  slot.device = request.device;
  slot.set_id = request.set_id;
  std::int64_t elements = 1;
  for (std::int64_t d : request.shape) elements *= d;
  slot.bytes = elements * static_cast<std::int64_t>(dtype_size(request.dtype));
  slot.ndims = static_cast<std::uint8_t>(std::min<std::size_t>(request.shape.size(), 255));
  for (std::size_t i = 0; i < kDims && i < request.shape.size(); ++i)
    slot.dims[i] = request.shape[i];
  slot.state.store(kSubmitted, std::memory_order_relaxed);
  slot.submitted.store(0, std::memory_order_relaxed);
  slot.agreed.store(0, std::memory_order_relaxed);
  slot.launched.store(0, std::memory_order_relaxed);
  slot.done.store(0, std::memory_order_relaxed);
  slot.batch.store(0, std::memory_order_relaxed);
  slot.backend.store(nullptr, std::memory_order_relaxed);
  slot.number.store(number, std::memory_order_release);
  return number;
}

void FlightRecorder::seen(std::uint64_t number, Clock::time_point cycle) {
  if (Slot* slot = slot_of(number)) {
    if (slot->submitted.load(std::memory_order_relaxed) == 0) {
      slot->submitted.store(nanos(cycle), std::memory_order_relaxed);
    }
  }
}

void FlightRecorder::launched(std::uint64_t number, std::uint64_t batch, const char* backend,
                              Clock::time_point agreed, Clock::time_point now) {
  if (Slot* slot = slot_of(number)) {
    if (slot->submitted.load(std::memory_order_relaxed) == 0) {
      slot->submitted.store(nanos(agreed), std::memory_order_relaxed);
    }
    slot->agreed.store(nanos(agreed), std::memory_order_relaxed);
    slot->launched.store(nanos(now), std::memory_order_relaxed);
    slot->batch.store(batch, std::memory_order_relaxed);
    slot->backend.store(backend, std::memory_order_relaxed);
    slot->state.store(kLaunched, std::memory_order_release);
  }
}

void FlightRecorder::completed(std::uint64_t number, Clock::time_point now) {
  if (Slot* slot = slot_of(number)) {
    slot->done.store(nanos(now), std::memory_order_relaxed);
    slot->state.store(kCompleted, std::memory_order_release);
  }
}

void FlightRecorder::failed(std::uint64_t number, const std::string& error, Clock::time_point now) {
  Slot* slot = slot_of(number);
  if (slot == nullptr || slot->state.load(std::memory_order_relaxed) >= kCompleted) return;
  slot->number.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  copy_field(slot->error, kErrorBytes, error);
  slot->done.store(nanos(now), std::memory_order_relaxed);
  slot->state.store(kFailed, std::memory_order_relaxed);
  slot->number.store(number, std::memory_order_release);
}

void FlightRecorder::write(std::ostream& out) const {
  // Microseconds since the epoch, from a steady time (0 stays 0).
  const auto wall_us = [this](std::int64_t steady_ns) -> long long {
    if (steady_ns == 0) return 0;
    const auto since_origin =
        std::chrono::nanoseconds(steady_ns) - steady_origin_.time_since_epoch();
    const auto wall = wall_origin_ +
                      std::chrono::duration_cast<std::chrono::system_clock::duration>(since_origin);
    return std::chrono::duration_cast<std::chrono::microseconds>(wall.time_since_epoch()).count();
  };
  out << "number\tname\top\treduce_op\tdtype\tdevice\tbytes\tshape\tprocess_set\tbackend\tbatch"
         "\tstate\tsubmitted_us\tagreed_us\tlaunched_us\tdone_us\terror\n";
  const std::uint64_t newest = next_.load(std::memory_order_acquire);
  const std::uint64_t oldest = newest > capacity_ ? newest - capacity_ + 1 : 1;
  for (std::uint64_t number = oldest; number <= newest; ++number) {
    const Slot& slot = slots_[number % capacity_];
    if (slot.number.load(std::memory_order_acquire) != number) continue;
    char name[kNameBytes], error[kErrorBytes];
    std::memcpy(name, slot.name, kNameBytes);
    std::memcpy(error, slot.error, kErrorBytes);
    name[kNameBytes - 1] = error[kErrorBytes - 1] = '\0';
    make_field(name);
    make_field(error);
    const char* op = slot.op;
    const ReduceOp reduce_op = slot.reduce_op;
    const DataType dtype = slot.dtype;
    const DeviceType device = slot.device;
    const std::int32_t set_id = slot.set_id;
    const std::int64_t bytes = slot.bytes;
    std::int64_t dims[kDims];
    std::memcpy(dims, slot.dims, sizeof dims);
    const std::uint8_t ndims = slot.ndims;
    const std::uint8_t state = slot.state.load(std::memory_order_acquire);
    const std::int64_t submitted = slot.submitted.load(std::memory_order_relaxed);
    const std::int64_t agreed = slot.agreed.load(std::memory_order_relaxed);
    const std::int64_t launched = slot.launched.load(std::memory_order_relaxed);
    const std::int64_t done = slot.done.load(std::memory_order_relaxed);
    const std::uint64_t batch = slot.batch.load(std::memory_order_relaxed);
    const char* backend = slot.backend.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.number.load(std::memory_order_relaxed) != number) continue;  // rewritten meanwhile
    std::string shape = "[";
    for (std::size_t i = 0; i < ndims && i < kDims; ++i) {
      shape += (i ? "," : "") + std::to_string(dims[i]);
    }
    shape += ndims > kDims ? ",...]" : "]";
    out << number << '\t' << name << '\t' << op << '\t' << reduce_op_name(reduce_op) << '\t'
        << dtype_name(dtype) << '\t' << (device == DeviceType::kCUDA ? "cuda" : "cpu") << '\t'
        << bytes << '\t' << shape << '\t' << set_id << '\t' << (backend ? backend : "-") << '\t'
        << batch << '\t' << state_name(state) << '\t' << wall_us(submitted) << '\t'
        << wall_us(agreed) << '\t' << wall_us(launched) << '\t' << wall_us(done) << '\t' << error
        << '\n';
  }
}

}  // namespace hvd
