// LayeredController: a control plane built over a setup controller (a
// shared-memory plane over MPI's or Gloo's, Gloo mode's TCP plane over
// Gloo's). It negotiates through the plane and gives up through the setup,
// whose roll call names the ranks that stopped answering; the plane has
// no roll call of its own. It also keeps the setup, and so its context,
// alive as long as the plane.
#pragma once

#include <memory>
#include <utility>

#include "base/check.h"
#include "core/diagnostics/peer_failure.h"
#include "core/negotiation/controller.h"

namespace hvd {

class LayeredController final : public Controller {
 public:
  LayeredController(std::unique_ptr<Controller> plane, std::unique_ptr<Controller> setup)
      : plane_(std::move(plane)), setup_(std::move(setup)) {
    HVD_CHECK(plane_ && setup_, InvalidArgument, "LayeredController needs a plane and a setup");
  }

  const Topology& topology() const override { return plane_->topology(); }
  std::vector<std::string> gather_to_root(const std::string& message) override {
    return through_roll_call("negotiation", [&] { return plane_->gather_to_root(message); });
  }
  std::string broadcast_from_root(const std::string& message) override {
    return through_roll_call("negotiation", [&] { return plane_->broadcast_from_root(message); });
  }
  void bitwise_and(std::vector<std::uint64_t>& words) override {
    through_roll_call("negotiation", [&] { plane_->bitwise_and(words); });
  }
  std::size_t payload_capacity() const override { return plane_->payload_capacity(); }
  void bitwise_and_gathering(std::vector<std::uint64_t>& words, const std::string& payload,
                             std::vector<std::string>& gathered) override {
    through_roll_call("negotiation",
                      [&] { plane_->bitwise_and_gathering(words, payload, gathered); });
  }
  [[noreturn]] void give_up(const std::string& what, const std::string& cause,
                            const std::vector<int>& blamed, bool listen) override {
    setup_->give_up(what, cause, blamed, listen);
    throw RankFailure(what + ": " + cause, blamed);  // give_up never returns
  }

  Controller& plane() { return *plane_; }

 private:
  // A plane's wait that ran out (PeerSilent) does not know which rank
  // stopped answering: the roll call does.
  template <typename Fn>
  auto through_roll_call(const char* what, Fn&& fn) -> decltype(fn()) {
    try {
      return fn();
    } catch (const PeerSilent& e) {
      give_up(what, e.what(), {}, true);
    }
  }

  std::unique_ptr<Controller> plane_;
  std::unique_ptr<Controller> setup_;
};

}  // namespace hvd
