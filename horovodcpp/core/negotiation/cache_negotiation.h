// CacheNegotiation: the steady state of negotiation (Horovod's design). A
// rank's request that hits the response cache is not sent to rank 0; it
// sets its slot's bit, and one bitwise AND over every rank's bit vector says
// which cached tensors every rank has submitted. Only when some rank has a
// new tensor, a changed one or something to announce (shutdown, join, rank
// 0's pending work) does the cycle also run the full gather/broadcast.
// Where the control plane carries payloads (shared memory), a rank whose
// only pending hit is a small CPU allreduce attaches its input to the bit
// vector; when every rank did for the same tensor and it is ready, the
// cycle has every rank's input already and no data collective runs
// (inline allreduce: one round for a lone small allreduce, not two).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/negotiation/controller.h"
#include "core/negotiation/message.h"
#include "core/negotiation/response_cache.h"

namespace hvd {

// What a rank announces in a cycle's bit vector (OR over ranks).
struct CycleFlags {
  bool shutdown = false;   // this rank is shutting down
  bool joined = false;     // this rank waits in join(): no cache use this cycle
  bool root_busy = false;  // rank 0 has pending tensors or news to broadcast
};

class CacheNegotiation {
 public:
  using Clock = std::chrono::steady_clock;

  // `stalled_after`: a hit that waits longer than this for other ranks is
  // renegotiated, so that rank 0's stall inspector sees it (0: never).
  CacheNegotiation(std::size_t capacity, std::chrono::milliseconds stalled_after);

  struct Outcome {
    // The cached responses every rank hit, in slot order: the cache's own
    // (no copy per collective), valid until update().
    std::vector<const Response*> ready;
    std::vector<Request> to_negotiate;  // this rank's requests for the full round
    bool full_round = false;            // true: every rank runs gather/broadcast now
    // ready.front() is an allreduce whose every rank's input came with the
    // bit vector (inline_inputs()).
    bool inline_data = false;
  };
  // Writes the input of `request` (this rank's, in flight) as the inline
  // allreduce sends it into `out` and returns true, if it is one that can
  // go inline and fits `capacity` bytes.
  using InlineInput =
      std::function<bool(const Request& request, std::size_t capacity, std::string& out)>;
  // Collective over `controller`: every rank calls it once per cycle.
  // `inline_input` (may be empty: nothing goes inline) as above. The
  // requests are moved from; the caller keeps the vector's storage.
  Outcome agree(std::vector<Request>&& new_requests, const CycleFlags& flags,
                Controller& controller, Clock::time_point now = Clock::now(),
                const InlineInput& inline_input = nullptr);
  // Every rank's input to the last Outcome with inline_data, indexed by rank.
  const std::vector<std::string>& inline_inputs() const { return gathered_; }
  // After the cycle ran: marks the slots served from the cache used, caches
  // the full round's successful responses (with this rank's request for
  // each) and sends hits whose slot was evicted to the next cycle's
  // negotiation. Every rank calls it with the same list, so every cache
  // stays identical.
  void update(const std::vector<Response>& negotiated);

  std::size_t pending_hits() const { return pending_hits_.size(); }

 private:
  struct PendingHit {
    Request request;
    Clock::time_point since;
  };
  using PendingHits = std::map<std::size_t, PendingHit>;  // by slot: ordered, as every rank orders

  void add_pending_hit(std::size_t slot, Request&& request, Clock::time_point since);
  // Removes the pending hit at `it` and returns the next one.
  PendingHits::iterator remove_pending_hit(PendingHits::iterator it);

  ResponseCache cache_;
  std::chrono::milliseconds stalled_after_;
  PendingHits pending_hits_;
  // Removed hits' nodes, for the next hits: a collective that hits the
  // cache allocates no node.
  std::vector<PendingHits::node_type> spare_hits_;
  std::vector<std::size_t> served_slots_;          // this cycle's Outcome::ready
  std::vector<Request> carried_;                   // to negotiate next cycle
  std::unordered_map<std::string, Request> sent_;  // negotiated, awaiting their response
  std::vector<std::uint64_t> words_;               // the cycle's bit vector, reused
  std::string payload_;                            // this rank's inline input, reused
  std::vector<std::string> gathered_;              // every rank's, reused
};

}  // namespace hvd
