#include "store/elastic_round.h"

#include <sstream>

#include "base/check.h"

namespace hvd {
namespace elastic {
namespace {

const char kRoundCounter[] = "elastic/round";

std::string round_key(long long number) { return "elastic/round/" + std::to_string(number); }
std::string reset_key(long long number) { return round_key(number) + "/reset"; }
std::string worker_key(long long worker) { return "elastic/worker/" + std::to_string(worker); }

}  // namespace

int Round::rank_of(long long worker) const {
  for (std::size_t rank = 0; rank < members.size(); ++rank) {
    if (members[rank].worker == worker) return static_cast<int>(rank);
  }
  return -1;
}

std::string encode_members(const std::vector<Member>& members) {
  std::ostringstream out;
  for (const Member& m : members) {
    HVD_CHECK(!m.host.empty() && m.host.find_first_of(" \t\n") == std::string::npos,
              InvalidArgument, "elastic: host name '" << m.host << "' is empty or has blanks");
    out << m.worker << ' ' << m.host << ' ' << m.local_rank << ' ' << m.local_size << ' '
        << m.cross_rank << ' ' << m.cross_size << '\n';
  }
  return out.str();
}

std::vector<Member> decode_members(const std::string& text) {
  std::vector<Member> members;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    Member m;
    std::string extra;
    const bool ok = static_cast<bool>(fields >> m.worker >> m.host >> m.local_rank >>
                                      m.local_size >> m.cross_rank >> m.cross_size) &&
                    !(fields >> extra);
    HVD_CHECK(ok, InvalidArgument, "elastic: malformed membership line '" << line << "'");
    members.push_back(std::move(m));
  }
  return members;
}

long long latest_round(Store& store) { return store.add(kRoundCounter, 0); }

Round read_round(Store& store, long long number, std::chrono::milliseconds timeout) {
  Round round;
  round.number = number;
  round.members = decode_members(store.get(round_key(number), timeout));
  return round;
}

void publish_round(Store& store, const Round& round) {
  const long long newest = latest_round(store);
  HVD_CHECK(round.number == newest + 1, InvalidArgument,
            "elastic: round " << round.number << " does not follow round " << newest);
  // Members first: a worker that sees the new number can read them at once.
  store.set(round_key(round.number), encode_members(round.members));
  store.add(kRoundCounter, 1);
}

long long reset_requests(Store& store, long long number) { return store.add(reset_key(number), 0); }

long long joined_round(Store& store, long long worker) { return store.add(worker_key(worker), 0); }

void request_new_round(Store& store, long long number) { store.add(reset_key(number), 1); }

void record_joined(Store& store, long long worker, long long number) {
  // A counter, so that the driver can read it without waiting: raised to
  // `number` (rounds only grow).
  const long long current = joined_round(store, worker);
  if (number > current) store.add(worker_key(worker), number - current);
}

}  // namespace elastic
}  // namespace hvd
