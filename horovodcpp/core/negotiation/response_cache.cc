#include "core/negotiation/response_cache.h"

#include <algorithm>

#include "base/check.h"
#include "settings/settings.h"

namespace hvd {

std::size_t ResponseCache::capacity_from_env() {
  return static_cast<std::size_t>(settings::read_int(settings::Setting::kCacheCapacity));
}

bool same_request(const Request& a, const Request& b) {
  return a.op_type == b.op_type && a.name == b.name && a.dtype == b.dtype && a.shape == b.shape &&
         a.reduce_op == b.reduce_op && a.root_rank == b.root_rank &&
         a.prescale_factor == b.prescale_factor && a.postscale_factor == b.postscale_factor &&
         a.device == b.device && a.splits == b.splits && a.group_id == b.group_id &&
         a.group_size == b.group_size;
}

ResponseCache::Found ResponseCache::lookup(const Request& request) const {
  auto it = slot_of_name_.find(request.name);
  if (it == slot_of_name_.end()) return {};
  const Slot& slot = slots_[it->second];
  // A request that failed local validation is never served from the cache:
  // it must reach rank 0, which reports it to every rank.
  const bool hit = slot.mine && request.error.empty() && same_request(*slot.mine, request);
  return {hit ? Lookup::kHit : Lookup::kInvalid, it->second};
}

void ResponseCache::put(const Response& response, const Request* mine) {
  HVD_CHECK(enabled(), Error, "response cache is disabled");
  auto it = slot_of_name_.find(response.name);
  const std::size_t index = it != slot_of_name_.end() ? it->second : allocate();
  Slot& slot = slots_[index];
  slot.used = true;
  slot.response = response;
  // Cached as the response of a job where every rank submitted: who had
  // joined this time is not part of the tensor.
  slot.response.joined_ranks.clear();
  slot.response.joined_template = Request();
  slot.mine.reset();
  if (mine) slot.mine = *mine;
  slot_of_name_[response.name] = index;
  slot.last_use = ++clock_;
}

std::size_t ResponseCache::allocate() {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i].used) return i;
  }
  if (slots_.size() < capacity_) {
    slots_.emplace_back();
    return slots_.size() - 1;
  }
  const auto lru = std::min_element(slots_.begin(), slots_.end(), [](const Slot& a, const Slot& b) {
    return a.last_use < b.last_use;
  });
  const std::size_t index = static_cast<std::size_t>(lru - slots_.begin());
  erase(index);
  return index;
}

void ResponseCache::touch(std::size_t slot) {
  HVD_CHECK(slot < slots_.size() && slots_[slot].used, Error, "touch of empty cache slot");
  slots_[slot].last_use = ++clock_;
}

void ResponseCache::erase(std::size_t slot) {
  HVD_CHECK(slot < slots_.size(), Error, "erase of cache slot " << slot << " out of range");
  Slot& s = slots_[slot];
  if (!s.used) return;
  slot_of_name_.erase(s.response.name);
  s = Slot();
}

bool ResponseCache::holds(std::size_t slot, const std::string& name) const {
  return slot < slots_.size() && slots_[slot].used && slots_[slot].response.name == name;
}

const Response& ResponseCache::response(std::size_t slot) const {
  HVD_CHECK(slot < slots_.size() && slots_[slot].used, Error, "empty cache slot " << slot);
  return slots_[slot].response;
}

const Request& ResponseCache::request(std::size_t slot) const {
  HVD_CHECK(slot < slots_.size() && slots_[slot].mine, Error,
            "cache slot " << slot << " has no request of this rank");
  return *slots_[slot].mine;
}

}  // namespace hvd
