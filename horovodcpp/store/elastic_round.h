// The membership of an elastic job, agreed through the rendezvous store.
// hvdrun's elastic driver publishes numbered rounds; each lists the worker
// processes that take part and their places, in rank order. A worker
// initializes from the newest round, so every member of a round knows the
// same membership before any collective runs.
//
// Keys (members written once; the others are counters):
//   elastic/round             the number of the newest round (a counter; 0: none yet)
//   elastic/round/N           round N's members, one line per rank in rank order:
//                             "WORKER HOST LOCAL_RANK LOCAL_SIZE CROSS_RANK CROSS_SIZE"
//   elastic/round/N/reset     how many of round N's members asked for a new round
//   elastic/worker/W          the last round worker W joined
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "store/store.h"

namespace hvd {
namespace elastic {

struct Member {
  long long worker = 0;  // hvdrun's number for the process (HOROVODCPP_ELASTIC_WORKER)
  std::string host;      // as hvdrun names it; no blanks
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
};

struct Round {
  long long number = 0;
  std::vector<Member> members;  // in rank order
  // The rank of `worker` in this round, or -1 when it is not a member.
  int rank_of(long long worker) const;
};

std::string encode_members(const std::vector<Member>& members);
// Throws InvalidArgument naming the line that is not a member.
std::vector<Member> decode_members(const std::string& text);

// The number of the newest round (0 before the first).
long long latest_round(Store& store);
// Round `number`, waiting up to `timeout` for it to be published.
Round read_round(Store& store, long long number, std::chrono::milliseconds timeout);

// The driver's side: publishes `round`, whose number must follow the newest.
void publish_round(Store& store, const Round& round);
// How many members of round `number` asked for a new round.
long long reset_requests(Store& store, long long number);
// The last round `worker` joined (0: none).
long long joined_round(Store& store, long long worker);

// A worker's side: asks hvdrun for a round after `number` (it failed there).
void request_new_round(Store& store, long long number);
// Records that `worker` joined round `number`.
void record_joined(Store& store, long long worker, long long number);

}  // namespace elastic
}  // namespace hvd
