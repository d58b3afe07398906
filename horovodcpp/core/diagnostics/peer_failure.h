// How a rank fails when a peer stops answering inside a collective: the one
// bound on waiting for a peer, and the error that names the silent ranks.
//
// A rank that waited the bound out (or learned that another rank did) does
// not know which peer is to blame: in a ring, rank 0 waits for rank 2, which
// waits for the stopped rank 1. So every rank that gives up tells the others
// (each transport in its own way: MPI messages, the Gloo store) and listens
// for their notices for a short window; the ranks it hears nothing from are
// the ones that stopped answering (stopped, hung, or dead).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "horovodcpp/errors.h"
#include "settings/settings.h"

namespace hvd {

// HOROVODCPP_PEER_TIMEOUT_SECONDS (hvdrun --peer-timeout), default 30: how
// long a rank waits inside a collective for a peer that makes no progress.
// `setting` may name a per-transport timeout (kGlooTimeoutSeconds,
// kShmTimeoutSeconds) that falls back on it. InvalidArgument unless positive.
std::chrono::milliseconds peer_timeout(
    settings::Setting setting = settings::Setting::kPeerTimeoutSeconds);

// How long a rank that gave up listens for the other ranks' notices: long
// enough for every survivor to give up too (they all wait on the same
// stopped peer, or on a survivor that already gave up), short next to the
// timeout. A tenth of it, between 2 and 5 seconds.
std::chrono::milliseconds roll_call_window(std::chrono::milliseconds timeout);

// "rank 1", "ranks 1, 3".
std::string ranks_str(const std::vector<int>& ranks);

// "1,3" and back, as notices carry the ranks their poster blames.
// parse_rank_list throws InvalidArgument on anything else.
std::string rank_list_text(const std::vector<int>& ranks);
std::vector<int> parse_rank_list(const std::string& text);

// What a wait throws when a peer made no progress in time, or another rank
// gave up: which rank stopped answering is for the transport's roll call to
// tell (Controller::give_up), not for the waiting rank.
class PeerSilent : public RankFailure {
 public:
  using RankFailure::RankFailure;
};

// The RankFailure of a rank that gave up on `what` (e.g. "Gloo allreduce")
// because of `cause` (e.g. "no progress for 30 s"), naming the `silent`
// ranks (RankFailure::ranks()).
RankFailure peer_failure(const std::string& what, const std::vector<int>& silent,
                         const std::string& cause);

}  // namespace hvd
