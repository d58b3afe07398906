// ResponseCache: Horovod's response cache. Every rank holds the same slots
// in the same order (they change only through agreed events, in agreed
// order), so a slot number names the same tensor on every rank and a
// steady-state cycle agrees on what is ready with one bitwise AND of slot
// bits instead of gathering and broadcasting requests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/negotiation/message.h"

namespace hvd {

class ResponseCache {
 public:
  // HOROVODCPP_CACHE_CAPACITY (default 1024, as Horovod); 0 disables it.
  static std::size_t capacity_from_env();

  explicit ResponseCache(std::size_t capacity) : capacity_(capacity) {}

  bool enabled() const { return capacity_ > 0; }
  // Slots allocated so far (the length of the bit vectors); at most capacity.
  std::size_t slot_count() const { return slots_.size(); }

  enum class Lookup {
    kMiss,     // the name is not cached: negotiate it
    kHit,      // cached with an identical request on this rank
    kInvalid,  // cached, but this rank's request differs: renegotiate
  };
  struct Found {
    Lookup lookup = Lookup::kMiss;
    std::size_t slot = 0;  // for kHit and kInvalid
  };
  Found lookup(const Request& request) const;

  // Stores an agreed, successful response with this rank's request for it
  // (null if this rank did not submit it, e.g. it had joined: it then cannot
  // hit until renegotiated). A cached name keeps its slot; a new name takes
  // the lowest free slot, else a new one, else evicts the least recently
  // used. Marks the slot used.
  void put(const Response& response, const Request* mine);
  // Marks a slot used (its cached response ran again).
  void touch(std::size_t slot);
  void erase(std::size_t slot);

  // True if `slot` holds the tensor `name`.
  bool holds(std::size_t slot, const std::string& name) const;
  // The slot's cached response and this rank's request (slot must be held).
  const Response& response(std::size_t slot) const;
  const Request& request(std::size_t slot) const;

 private:
  struct Slot {
    bool used = false;
    Response response;
    std::optional<Request> mine;
    std::uint64_t last_use = 0;
  };

  std::size_t allocate();

  std::size_t capacity_;
  std::vector<Slot> slots_;
  std::unordered_map<std::string, std::size_t> slot_of_name_;
  std::uint64_t clock_ = 0;
};

// True if two submissions of a tensor would negotiate to the same response
// (everything but the rank and the local error).
bool same_request(const Request& a, const Request& b);

}  // namespace hvd
