#include "core/negotiation/cache_negotiation.h"

#include <optional>

#include "base/check.h"

namespace hvd {
namespace {

// Word 0 carries the flags, then one bit per slot for hits, one per slot
// for invalidations, and one per slot for inputs sent inline. Flags and
// invalidations travel inverted so that the AND over ranks is their OR.
constexpr std::uint64_t kHasRequests = 1u << 0;
constexpr std::uint64_t kShutdown = 1u << 1;
constexpr std::uint64_t kJoined = 1u << 2;
constexpr std::uint64_t kRootBusy = 1u << 3;

bool bit(const std::vector<std::uint64_t>& words, std::size_t base, std::size_t slot) {
  return (words[base + slot / 64] >> (slot % 64)) & 1u;
}

void set_bit(std::vector<std::uint64_t>& words, std::size_t base, std::size_t slot) {
  words[base + slot / 64] |= std::uint64_t{1} << (slot % 64);
}

void clear_bit(std::vector<std::uint64_t>& words, std::size_t base, std::size_t slot) {
  words[base + slot / 64] &= ~(std::uint64_t{1} << (slot % 64));
}

// Grouped tensors and joins always take the full round: a group must be
// released as a whole, and a join is answered by rank 0. A barrier (one
// name every time) hits like a tensor: in a loop it costs one bit exchange.
bool cacheable(const Request& request) {
  return request.op_type != OpType::kJoin && request.group_id.empty();
}

}  // namespace

CacheNegotiation::CacheNegotiation(std::size_t capacity, std::chrono::milliseconds stalled_after)
    : cache_(capacity), stalled_after_(stalled_after) {
  HVD_CHECK(capacity > 0, InvalidArgument, "CacheNegotiation needs a capacity");
}

CacheNegotiation::Outcome CacheNegotiation::agree(std::vector<Request>&& new_requests,
                                                  const CycleFlags& flags, Controller& controller,
                                                  Clock::time_point now,
                                                  const InlineInput& inline_input) {
  Outcome outcome;
  served_slots_.clear();
  outcome.to_negotiate = std::move(carried_);
  carried_.clear();
  // Reused from cycle to cycle: a cycle allocates no bit vector.
  std::vector<std::uint64_t>& words = words_;
  const std::size_t slot_words = (cache_.slot_count() + 63) / 64;
  const std::size_t hits_base = 1, invalid_base = 1 + slot_words, inline_base = 1 + 2 * slot_words;
  words.assign(1 + 3 * slot_words, 0);
  for (std::size_t w = invalid_base; w < inline_base; ++w) words[w] = ~std::uint64_t{0};
  for (Request& request : new_requests) {
    ResponseCache::Found found = cache_.lookup(request);
    if (!cacheable(request) && found.lookup == ResponseCache::Lookup::kHit) {
      found.lookup = ResponseCache::Lookup::kInvalid;  // never served from the cache
    }
    if (found.lookup == ResponseCache::Lookup::kHit) {
      add_pending_hit(found.slot, std::move(request), now);
      continue;
    }
    if (found.lookup == ResponseCache::Lookup::kInvalid) clear_bit(words, invalid_base, found.slot);
    outcome.to_negotiate.push_back(std::move(request));
  }
  for (const auto& [slot, hit] : pending_hits_) {
    set_bit(words, hits_base, slot);
    if (stalled_after_.count() > 0 && now - hit.since > stalled_after_) {
      clear_bit(words, invalid_base, slot);
    }
  }
  // A lone hit (so at most one slot is ready on any rank that sent its
  // input) goes inline where the plane carries it.
  payload_.clear();
  std::optional<std::size_t> inline_slot;
  const std::size_t capacity = controller.payload_capacity();
  if (inline_input && capacity > 0 && pending_hits_.size() == 1 && !flags.joined) {
    const auto& [slot, hit] = *pending_hits_.begin();
    if (inline_input(hit.request, capacity, payload_)) {
      inline_slot = slot;
      set_bit(words, inline_base, slot);
    } else {
      payload_.clear();
    }
  }
  std::uint64_t mine = 0;
  if (!outcome.to_negotiate.empty()) mine |= kHasRequests;
  if (flags.shutdown) mine |= kShutdown;
  if (flags.joined) mine |= kJoined;
  if (flags.root_busy) mine |= kRootBusy;
  words[0] = ~mine;

  if (capacity > 0) {
    controller.bitwise_and_gathering(words, payload_, gathered_);
  } else {
    controller.bitwise_and(words);
  }

  const std::uint64_t any = ~words[0];
  outcome.full_round = any != 0;
  // Slots some rank invalidated go on every rank; a hit on one is negotiated.
  for (std::size_t slot = 0; slot < cache_.slot_count(); ++slot) {
    if (bit(words, invalid_base, slot)) continue;
    outcome.full_round = true;
    auto hit = pending_hits_.find(slot);
    if (hit != pending_hits_.end()) {
      outcome.to_negotiate.push_back(std::move(hit->second.request));
      remove_pending_hit(hit);
    }
    cache_.erase(slot);
  }
  if (any & kJoined) {
    // A joined rank submits nothing, so no slot can be common: everything
    // goes to rank 0, which lets tensors proceed without the joined ranks.
    for (auto it = pending_hits_.begin(); it != pending_hits_.end();) {
      outcome.to_negotiate.push_back(std::move(it->second.request));
      it = remove_pending_hit(it);
    }
  }
  for (auto it = pending_hits_.begin(); it != pending_hits_.end();) {
    if (bit(words, hits_base, it->first)) {
      outcome.ready.push_back(&cache_.response(it->first));
      served_slots_.push_back(it->first);
      it = remove_pending_hit(it);
    } else {
      ++it;
    }
  }
  // Every rank sent its input for that slot, and it is ready (not
  // invalidated, nobody joined): it was this rank's only hit, so it is the
  // only one served.
  outcome.inline_data = inline_slot && bit(words, inline_base, *inline_slot) &&
                        served_slots_.size() == 1 && served_slots_.front() == *inline_slot;
  if (outcome.full_round) {
    for (const Request& request : outcome.to_negotiate) sent_[request.name] = request;
  }
  return outcome;
}

void CacheNegotiation::update(const std::vector<Response>& negotiated) {
  for (std::size_t slot : served_slots_) cache_.touch(slot);
  served_slots_.clear();
  for (const Response& response : negotiated) {
    auto it = sent_.find(response.name);
    const Request* mine = it != sent_.end() ? &it->second : nullptr;
    const bool ok = response.error_kind == ErrorKind::kNone;
    if (ok && (mine ? cacheable(*mine) : cacheable(response.joined_template))) {
      cache_.put(response, mine);
    }
    if (it != sent_.end()) sent_.erase(it);
  }
  // A put may have evicted a slot this rank still waits on.
  for (auto it = pending_hits_.begin(); it != pending_hits_.end();) {
    if (cache_.holds(it->first, it->second.request.name)) {
      ++it;
    } else {
      carried_.push_back(std::move(it->second.request));
      it = remove_pending_hit(it);
    }
  }
}

void CacheNegotiation::add_pending_hit(std::size_t slot, Request&& request,
                                       Clock::time_point since) {
  if (spare_hits_.empty()) {
    pending_hits_.emplace(slot, PendingHit{std::move(request), since});
    return;
  }
  PendingHits::node_type node = std::move(spare_hits_.back());
  spare_hits_.pop_back();
  node.key() = slot;
  node.mapped().request = std::move(request);
  node.mapped().since = since;
  pending_hits_.insert(std::move(node));
}

CacheNegotiation::PendingHits::iterator CacheNegotiation::remove_pending_hit(
    PendingHits::iterator it) {
  const auto next = std::next(it);
  spare_hits_.push_back(pending_hits_.extract(it));
  return next;
}

}  // namespace hvd
