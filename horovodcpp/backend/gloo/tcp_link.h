// TcpLink: one connection of the TCP control plane to a peer rank, carrying
// frames: a header (kind, round, payload length) and the payload. The
// socket is non-blocking and a frame comes in piece by piece, as much as
// has arrived, so one thread can wait on several links at once
// (receive_frames).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace hvd {
namespace tcp {

using Clock = std::chrono::steady_clock;

enum class FrameKind : std::uint32_t {
  kHello = 1,    // setup: the connecting rank's rank (after it proved the job's key)
  kData = 2,     // a collective's message
  kFailure = 3,  // the sender gives up; the payload says why
};

struct FrameHeader {
  std::uint32_t kind = 0;
  std::uint32_t round = 0;  // the collective's number: both sides must be in step
  std::uint64_t bytes = 0;  // of payload
};

class TcpLink {
 public:
  // Takes `fd`, a connected non-blocking socket to rank `peer`.
  TcpLink(int fd, int peer);
  ~TcpLink();
  TcpLink(const TcpLink&) = delete;
  TcpLink& operator=(const TcpLink&) = delete;

  int fd() const { return fd_; }
  int peer() const { return peer_; }
  void set_peer(int peer) { peer_ = peer; }

  // Sends a whole frame, waiting for buffer space until `deadline`. Throws
  // PeerSilent when the connection is lost or the deadline passes (the peer
  // may only be waiting on another rank: the roll call tells who stopped);
  // `what` names the collective.
  void send(FrameKind kind, std::uint32_t round, const void* payload, std::size_t bytes,
            Clock::time_point deadline, const char* what);
  // Reads what has arrived without waiting; true once a whole frame is in
  // (header(), payload()). Throws PeerSilent when the peer closed the
  // connection, BackendError for a frame no peer would send.
  bool receive(const char* what);
  bool complete() const { return complete_; }
  const FrameHeader& header() const { return header_; }
  std::string& payload() { return payload_; }
  // Makes room for the next frame.
  void next_frame();

  // Never waits, never throws: tells the peer why this rank gives up, if its
  // socket buffer has room, then closes the connection.
  void fail_and_close(const std::string& reason);

 private:
  int fd_;
  int peer_;
  FrameHeader header_;
  std::size_t header_got_ = 0;
  std::string payload_;
  std::size_t payload_got_ = 0;
  bool complete_ = false;
};

// Waits until each link in `links` has a whole frame: reading for
// `spin_for`, then sleeping in poll(2) until bytes arrive. Throws
// PeerSilent: with the sender's reason when a failure frame arrives, naming
// the peer when a link closes or when `deadlines[i]` passes before
// links[i]'s frame.
void receive_frames(const std::vector<TcpLink*>& links,
                    const std::vector<Clock::time_point>& deadlines, Clock::duration spin_for,
                    const char* what);

}  // namespace tcp
}  // namespace hvd
