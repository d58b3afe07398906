// GlooContext: the job's place (Topology), the rendezvous and the two Gloo
// contexts (control plane and data plane) that GlooController and
// GlooBackend share. One per Runtime.
//
// Environment (HOROVODCPP_X, or Horovod's HOROVOD_X), as hvdrun sets it:
//   RANK, SIZE, LOCAL_RANK, LOCAL_SIZE, CROSS_RANK, CROSS_SIZE: the job.
//     None of them set: a task of a Slurm step that srun started takes
//     its place from Slurm (gloo_slurm.h); else a single-rank job (no
//     launcher, no store needed).
//   GLOO_RENDEZVOUS_ADDR + GLOO_RENDEZVOUS_PORT: a TcpStore (hvdrun's), or
//   GLOO_FILE_STORE=dir: a FileStore on a directory every rank sees; in a
//   Slurm step without them, the store rank 0 hosts (gloo_slurm.h).
//   GLOO_IFACE: the network interface to use; else HOSTNAME: the address
//     to listen on; else 127.0.0.1 when every rank is local, else the
//     machine's hostname.
//   PEER_TIMEOUT_SECONDS (default 30), or Horovod's GLOO_TIMEOUT_SECONDS
//     for Gloo alone: bounds the rendezvous and every collective, so a dead
//     or stuck peer becomes an error naming it, not a hang.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/tcp/attr.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/negotiation/controller.h"
#include "store/store.h"

namespace hvd {

struct GlooOptions {
  Topology topology;
  // May be null for a single-rank job.
  std::shared_ptr<Store> store;
  gloo::transport::tcp::attr network;
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  // Where this context's keys live in the store. Empty: the process's next
  // GlooStoreAdapter::next_init_prefix(), which every rank of a job agrees
  // on when each rank is a process. Ranks that share a process (threads)
  // must name one prefix for all of them.
  std::string prefix;
};

class ElasticWorker;

class GlooContext {
 public:
  // Reads the options from the environment (see above) and connects; in an
  // elastic job, create_elastic(). `check_job` (if set) sees the job's
  // topology first, and what it throws propagates: before any rank connects
  // (every rank refuses alike, none is left in a rendezvous that a refusing
  // peer abandoned), or after the membership round in an elastic job,
  // whose size only that round decides.
  static std::shared_ptr<GlooContext> create(
      const std::function<void(const Topology&)>& check_job = nullptr);
  // Connects every rank of `options.topology` through `options.store`.
  // Throws BackendError if the rendezvous fails (e.g. a rank never came).
  static std::shared_ptr<GlooContext> create(const GlooOptions& options);
  // The options create() would use; throws InvalidArgument, saying what is
  // missing, for an incomplete or inconsistent environment.
  static GlooOptions options_from_environment();
  // An elastic job's worker: the topology comes from the newest membership
  // round in the store (gloo_elastic.cc).
  static std::shared_ptr<GlooContext> create_elastic(ElasticWorker& worker);

  ~GlooContext();
  GlooContext(const GlooContext&) = delete;
  GlooContext& operator=(const GlooContext&) = delete;

  // A context over a subset of this one's ranks (a process set): `members`,
  // the job ranks in order, among which this rank has the place
  // `topology`. Its members meet through this context's store, under keys
  // of their own named by `name` (unique within this context, e.g.
  // "process_set.3"), and share its TCP device. Collective over the members.
  std::shared_ptr<GlooContext> create_subset(const std::string& name, const Topology& topology,
                                             const std::vector<int>& members) const;

  const Topology& topology() const { return options_.topology; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }
  // The rendezvous store (null in a single-rank job without one) and the
  // prefix of this context's keys in it.
  const std::shared_ptr<Store>& store() const { return options_.store; }
  // The numeric address the data and control contexts listen on ("10.0.0.2"):
  // other connections of this rank to its peers listen there too.
  std::string listen_address() const;
  const std::string& prefix() const { return prefix_; }
  // Negotiation and data move on separate contexts so they never interfere.
  // Two threads may run collectives on data() at once (the Gloo backend's
  // allreduce lanes): once one of them has given up on the context, these
  // throw the RankFailure it ends with.
  std::shared_ptr<gloo::Context> control() const { return usable(control_); }
  std::shared_ptr<gloo::Context> data() const { return usable(data_); }

  // Runs `fn`, a collective on control() or data() (`what` names it in
  // errors), and turns whatever Gloo throws into an hvd::Error. A lost
  // connection or an expired timeout means that a peer failed: this rank
  // gives up on the context (core/diagnostics/peer_failure.h): it posts a notice in the
  // store, closes its connections, so that peers blocked on it fail at once
  // too, and throws the RankFailure naming the ranks that posted none within
  // the roll-call window. Every later call throws that error again. Any
  // other Gloo failure is a BackendError; hvd::Errors pass through.
  template <typename Fn>
  void run(const char* what, Fn&& fn);
  // Gives up on the context as run() does after `operation` failed because
  // of `cause`, passing on `blamed` with the notice: Controller::give_up.
  [[noreturn]] void give_up(const std::string& operation, const std::string& cause,
                            const std::vector<int>& blamed = {}, bool listen = true);

 private:
  GlooContext() = default;
  // Connects the control and data contexts of `options.topology` under
  // `prefix` over `device`.
  static std::shared_ptr<GlooContext> connect(const GlooOptions& options,
                                              std::shared_ptr<gloo::transport::Device> device,
                                              const std::string& prefix);

  [[noreturn]] void fail(const char* what);
  void check_usable() const;
  // `context` if this context was not given up on; else, once the thread
  // giving up is done, its RankFailure.
  std::shared_ptr<gloo::Context> usable(const std::shared_ptr<gloo::Context>& context) const;

  GlooOptions options_;
  std::string prefix_;
  std::vector<int> members_;  // the job rank of each rank of this context
  // give_up() holds giving_up_ throughout; state_ guards verdict_, silent_,
  // control_ and data_.
  mutable std::mutex giving_up_;
  mutable std::mutex state_;
  std::string verdict_;      // the error message, once given up
  std::vector<int> silent_;  // the ranks it named
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> control_;
  std::shared_ptr<gloo::Context> data_;
};

// This machine's hostname (BackendError if it cannot be read).
std::string machine_hostname();

// hvdrun's name for this rank's host (HOROVODCPP_HOSTNAME), "" if unset:
// two "hosts" with one machine name (127.0.0.1 and 127.0.0.2, or network
// namespaces) stay apart.
std::string listed_hostname();

namespace detail {
// Rethrows the exception in flight as an hvd::Error: a lost connection or an
// expired timeout as a RankFailure, any other failure as a BackendError.
[[noreturn]] void rethrow_as_hvd_error(const char* what);
}  // namespace detail

template <typename Fn>
void GlooContext::run(const char* what, Fn&& fn) {
  check_usable();
  try {
    fn();
  } catch (...) {
    fail(what);
  }
}

}  // namespace hvd
