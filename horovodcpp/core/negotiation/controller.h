// Controller: the control plane the coordinator negotiates over. Rank 0
// gathers every rank's requests and broadcasts the agreed responses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/check.h"
#include "horovodcpp/errors.h"

namespace hvd {

struct Topology {
  int rank = 0;
  int size = 1;
  int local_rank = 0;  // rank among the processes on this host
  int local_size = 1;
  int cross_rank = 0;  // index of this host (among ranks with this local_rank)
  int cross_size = 1;
};

class Controller {
 public:
  virtual ~Controller() = default;
  virtual const Topology& topology() const = 0;

  // Collective: rank 0 returns every rank's message indexed by rank; the
  // other ranks return an empty vector.
  virtual std::vector<std::string> gather_to_root(const std::string& message) = 0;
  // Collective: every rank returns rank 0's message.
  virtual std::string broadcast_from_root(const std::string& message) = 0;
  // Collective: every rank's `words` become the bitwise AND over all ranks
  // (the response cache's one-message steady state; OR is AND of inverses).
  virtual void bitwise_and(std::vector<std::uint64_t>& words) = 0;
  // The bytes of its own a rank can attach to a bitwise AND (0: none, the
  // default). A plane that carries them (shared memory) lets a lone small
  // allreduce travel with the cycle's bit vector: one round, not two
  // (CacheNegotiation).
  virtual std::size_t payload_capacity() const { return 0; }
  // Collective: bitwise_and that also gathers every rank's `payload` (at
  // most payload_capacity() bytes; may be empty): `gathered[r]` becomes
  // rank r's. By default only for empty payloads.
  virtual void bitwise_and_gathering(std::vector<std::uint64_t>& words, const std::string& payload,
                                     std::vector<std::string>& gathered) {
    HVD_CHECK(payload.empty(), InvalidArgument, "this control plane carries no payload");
    bitwise_and(words);
    gathered.assign(static_cast<std::size_t>(topology().size), std::string());
  }

  // Gives up on the ranks' collectives after `what` (e.g. "shm allreduce")
  // failed because of `cause`: a transport that can tell the other ranks
  // does, passing on `blamed` (job ranks this rank already knows failed,
  // e.g. a host peer that died, which the others then name too), and throws
  // the RankFailure naming the ranks that stopped answering
  // (core/diagnostics/peer_failure.h); its later collectives fail at once. Without
  // `listen` it only posts its notice: the error then names `blamed` alone.
  // By default, a RankFailure naming `blamed`.
  [[noreturn]] virtual void give_up(const std::string& what, const std::string& cause,
                                    const std::vector<int>& blamed = {}, bool listen = true) {
    (void)listen;
    throw RankFailure(what + ": " + cause, blamed);
  }
};

}  // namespace hvd
