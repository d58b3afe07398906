// GlooContext: the job's place (Topology), the rendezvous and the two Gloo
// contexts (control plane and data plane) that GlooController and
// GlooBackend share. One per Runtime.
//
// Environment (HOROVODCPP_X, or Horovod's HOROVOD_X), as hvdrun sets it:
//   RANK, SIZE, LOCAL_RANK, LOCAL_SIZE, CROSS_RANK, CROSS_SIZE: the job.
//     None of them set: a single-rank job (no launcher, no store needed).
//   GLOO_RENDEZVOUS_ADDR + GLOO_RENDEZVOUS_PORT: a TcpStore (hvdrun's), or
//   GLOO_FILE_STORE=dir: a FileStore on a directory every rank sees.
//   GLOO_IFACE: the network interface to use; else HOSTNAME: the address
//     to listen on; else 127.0.0.1 when every rank is local, else the
//     machine's hostname.
//   GLOO_TIMEOUT_SECONDS (default 30): bounds the rendezvous and every
//     collective, so a dead or stuck peer becomes an error, not a hang.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/tcp/attr.h>

#include <chrono>
#include <memory>
#include <string>

#include "core/controller.h"
#include "store/store.h"

namespace hvd {

struct GlooOptions {
  Topology topology;
  // May be null for a single-rank job.
  std::shared_ptr<Store> store;
  gloo::transport::tcp::attr network;
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
};

class GlooContext {
 public:
  // Reads the options from the environment (see above) and connects.
  static std::shared_ptr<GlooContext> create();
  // Connects every rank of `options.topology` through `options.store`.
  // Throws BackendError if the rendezvous fails (e.g. a rank never came).
  static std::shared_ptr<GlooContext> create(const GlooOptions& options);
  // The options create() would use; throws InvalidArgument, saying what is
  // missing, for an incomplete or inconsistent environment.
  static GlooOptions options_from_environment();

  ~GlooContext();
  GlooContext(const GlooContext&) = delete;
  GlooContext& operator=(const GlooContext&) = delete;

  // A context over a subset of this one's ranks (a process set), in which
  // this rank has the place `topology`. Its members meet through this
  // context's store, under keys of their own named by `name` (unique within
  // this context, e.g. "process_set.3"), and share its TCP device.
  // Collective over the members.
  std::shared_ptr<GlooContext> create_subset(const std::string& name,
                                             const Topology& topology) const;

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
  const std::shared_ptr<gloo::Context>& control() const { return control_; }
  const std::shared_ptr<gloo::Context>& data() const { return data_; }

 private:
  GlooContext() = default;
  // Connects the control and data contexts of `options.topology` under
  // `prefix` over `device`.
  static std::shared_ptr<GlooContext> connect(const GlooOptions& options,
                                              std::shared_ptr<gloo::transport::Device> device,
                                              const std::string& prefix);

  GlooOptions options_;
  std::string prefix_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> control_;
  std::shared_ptr<gloo::Context> data_;
};

// This machine's hostname (BackendError if it cannot be read).
std::string machine_hostname();

// Runs `fn` (Gloo calls) and turns whatever Gloo throws into an hvd::Error:
// a lost connection or an expired timeout (a peer died or hangs) into a
// RankFailure, any other Gloo failure into a BackendError. `what` names the
// operation in the message. hvd::Errors pass through unchanged.
template <typename Fn>
void gloo_call(const char* what, Fn&& fn);

namespace detail {
// Rethrows the exception in flight as an hvd::Error (see gloo_call).
[[noreturn]] void rethrow_as_hvd_error(const char* what);
}  // namespace detail

template <typename Fn>
void gloo_call(const char* what, Fn&& fn) {
  try {
    fn();
  } catch (...) {
    detail::rethrow_as_hvd_error(what);
  }
}

}  // namespace hvd
