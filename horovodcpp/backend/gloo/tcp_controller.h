// TcpController: negotiation over TCP connections of its own, for ranks on
// several hosts (or when shared memory is off). The ranks form a tree
// (rank r's parent is (r - 1) / fan_out), each connected to its parent and
// children once at setup; a collective is one frame up the tree and/or one
// down, sent and read by the calling thread itself. Gloo's own collectives
// cost hundreds of microseconds on top (a device thread, buffer pairing,
// two collectives per control message); these cost what the network does.
//
// Waiting: reading for 20 us where every rank of the host has a core, then
// sleeping in poll(2) until bytes arrive (reading for 200 us first, as MPI
// mode polls, made a loopback round trip on 2 busy cores take about 1 ms:
// the peer and the kernel's delivery of its bytes need the core).
//
// Failures: a peer that dies closes its connections, so its neighbours fail
// at once naming it; one that stops answering is named after
// HOROVODCPP_GLOO_TIMEOUT_SECONDS. A rank that fails sends the reason to its
// neighbours before closing, so every rank's error names the same rank. To
// make the rank next to a failure report it first, a rank waits for a child
// longer by `grace` per level of tree below the child, and for its parent
// longer than any rank waits for a child.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/gloo/tcp_link.h"
#include "core/negotiation/controller.h"

namespace hvd {

struct TcpControllerOptions {
  std::string address;  // numeric address to listen on, e.g. "10.0.0.2", "::1"
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};  // HOROVODCPP_GLOO_TIMEOUT_SECONDS
  // Children per rank: up to 1 + fan_out ranks take one hop to the root.
  int fan_out = 8;
};

class TcpController : public Controller {
 public:
  // Collective over `setup`'s ranks (which only serves the setup: the
  // ranks exchange their listening addresses over it): connects the tree.
  // Null on every rank if some rank could not connect (rank 0 logs why, and
  // that `fallback` is used).
  static std::unique_ptr<TcpController> connect(Controller& setup,
                                                const TcpControllerOptions& options,
                                                const std::string& fallback);

  const Topology& topology() const override { return topology_; }
  std::vector<std::string> gather_to_root(const std::string& message) override;
  std::string broadcast_from_root(const std::string& message) override;
  // Throws InvalidArgument on every rank if the ranks' vectors differ in length.
  void bitwise_and(std::vector<std::uint64_t>& words) override;

 private:
  TcpController(const Topology& topology, const TcpControllerOptions& options);
  int parent_of(int rank) const { return (rank - 1) / fan_out_; }
  int first_child_of(int rank) const { return rank * fan_out_ + 1; }
  int height_of(int rank) const;  // levels of tree below `rank`
  int depth_of(int rank) const;   // levels above it
  // Setup: connects to the parent (`addresses` by rank) and accepts the
  // children on `listener`; every connection proves `key`, the secret rank
  // 0 handed out through the setup controller (store/job_auth.h). Throws on
  // failure.
  void connect_tree(int listener, const std::vector<std::string>& addresses,
                    const std::string& key);
  void connect_to_parent(const std::vector<std::string>& addresses, const std::string& key,
                         tcp::Clock::time_point deadline);
  void accept_children(int listener, const std::string& key, tcp::Clock::time_point deadline);
  bool adopt_child(int fd, tcp::Clock::time_point deadline);

  // Runs one collective; any failure but an argument error breaks the
  // controller and is passed on to every neighbour (see above).
  template <typename Collective>
  auto run(const char* what, Collective&& collective);
  // This rank's children's frames of round `round_`, all in.
  void receive_from_children(const char* what);
  // The parent's frame of round `round_`.
  std::string& receive_from_parent(const char* what);
  void send_to_parent(const std::string& payload, const char* what);
  void send_to_children(const std::string& payload, const char* what);
  void check_round(tcp::TcpLink& link, const char* what) const;

  Topology topology_;
  tcp::Clock::duration spin_for_;  // how long a wait reads before it sleeps
  std::chrono::milliseconds timeout_;
  int fan_out_;
  std::unique_ptr<tcp::TcpLink> parent_;                 // null at the root
  std::vector<std::unique_ptr<tcp::TcpLink>> children_;  // ascending ranks
  std::vector<tcp::TcpLink*> child_links_;               // the same, for receive_frames
  // How long this rank waits for each child and for its parent (see above).
  std::vector<tcp::Clock::duration> child_patience_;
  tcp::Clock::duration parent_patience_{};
  std::vector<tcp::Clock::time_point> deadlines_;  // scratch, per child
  std::uint32_t round_ = 0;                        // of the collective in progress
  std::string broken_;                             // why an earlier collective failed
  std::string up_;                                 // scratch: the frame to the parent
};

}  // namespace hvd
