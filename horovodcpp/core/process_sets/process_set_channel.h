// ProcessSetChannel: what the API thread needs from a transport to change
// the process sets of a job: an exchange over every rank of the job, and the
// transport (controller + backend) of a subset of its ranks. Each job-wide
// transport provides one (Transport::process_sets). It has communicators of
// its own, used only by the API thread under the runtime's management lock,
// never by a coordinator, so changing sets never interleaves with
// negotiation.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace hvd {

struct Transport;

class ProcessSetChannel {
 public:
  virtual ~ProcessSetChannel() = default;

  // Collective over all ranks of the job: every rank's `message`, indexed by
  // global rank. Throws hvd::Timeout if some rank has not called it within
  // `timeout`; the channel is then unusable (a later exchange could pair
  // with the late rank's stale one), which the caller must remember.
  virtual std::vector<std::string> allgather(const std::string& message,
                                             std::chrono::milliseconds timeout) = 0;

  // Collective over all ranks of the job, called with the same arguments
  // everywhere: the transport of the set `id` over the ascending global
  // `ranks`. Members get a controller and backend whose topology is their
  // place in the set; the other ranks get an empty Transport.
  virtual Transport create_transport(int id, const std::vector<int>& ranks) = 0;

  // Collective over all ranks of the job on the first call (later calls
  // return the same): a key per global rank naming its host, equal exactly
  // for the ranks the transport's topology puts on one host (its
  // local_rank/local_size).
  virtual const std::vector<std::string>& host_keys() = 0;
  // Why create_transport would refuse on this rank (empty: it would not).
  virtual std::string cannot_create_transports() const { return ""; }
};

}  // namespace hvd
