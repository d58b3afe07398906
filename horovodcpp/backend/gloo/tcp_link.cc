#include "backend/gloo/tcp_link.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/check.h"
#include "core/diagnostics/peer_failure.h"
#include "store/tcp_connect.h"

namespace hvd {
namespace tcp {
namespace {

// No control message comes near this; a larger length is a garbled stream.
constexpr std::uint64_t kMaxPayloadBytes = std::uint64_t{1} << 32;

bool would_block() { return errno == EAGAIN || errno == EWOULDBLOCK; }

}  // namespace

TcpLink::TcpLink(int fd, int peer) : fd_(fd), peer_(peer) {}

TcpLink::~TcpLink() {
  if (fd_ >= 0) ::close(fd_);
}

void TcpLink::send(FrameKind kind, std::uint32_t round, const void* payload, std::size_t bytes,
                   Clock::time_point deadline, const char* what) {
  HVD_CHECK(fd_ >= 0, PeerSilent,
            "TCP control " << what << ": the connection to rank " << peer_ << " is closed");
  const FrameHeader header{static_cast<std::uint32_t>(kind), round, bytes};
  iovec parts[2] = {{const_cast<FrameHeader*>(&header), sizeof header},
                    {const_cast<void*>(payload), bytes}};
  std::size_t first = 0;
  while (first < 2) {
    msghdr message{};
    message.msg_iov = parts + first;
    message.msg_iovlen = 2 - first;
    const ssize_t sent = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      HVD_CHECK(would_block(), PeerSilent,
                "TCP control " << what << ": lost the connection to rank " << peer_
                               << " (did it die?): " << std::strerror(errno));
      pollfd p{fd_, POLLOUT, 0};
      const int ready = ::poll(&p, 1, remaining_ms(deadline));
      HVD_CHECK(ready != 0, PeerSilent,
                "TCP control " << what << ": rank " << peer_
                               << " did not take this rank's message in time");
      continue;
    }
    // Skip what went out; the iovecs keep the rest.
    auto left = static_cast<std::size_t>(sent);
    while (first < 2 && left >= parts[first].iov_len) left -= parts[first++].iov_len;
    if (first < 2) {
      parts[first].iov_base = static_cast<char*>(parts[first].iov_base) + left;
      parts[first].iov_len -= left;
    }
  }
}

bool TcpLink::receive(const char* what) {
  if (complete_) return true;
  HVD_CHECK(fd_ >= 0, PeerSilent,
            "TCP control " << what << ": the connection to rank " << peer_ << " is closed");
  for (;;) {
    char* to;
    std::size_t want;
    if (header_got_ < sizeof header_) {
      to = reinterpret_cast<char*>(&header_) + header_got_;
      want = sizeof header_ - header_got_;
    } else {
      to = payload_.data() + payload_got_;
      want = payload_.size() - payload_got_;
    }
    const ssize_t got = ::recv(fd_, to, want, MSG_DONTWAIT);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (would_block()) return false;
      HVD_THROW(PeerSilent, "TCP control " << what << ": lost the connection to rank " << peer_
                                           << " (did it die?): " << std::strerror(errno));
    }
    HVD_CHECK(got > 0, PeerSilent,
              "TCP control " << what << ": rank " << peer_
                             << " closed its connection (did it die or stop?)");
    if (header_got_ < sizeof header_) {
      header_got_ += static_cast<std::size_t>(got);
      if (header_got_ < sizeof header_) continue;
      HVD_CHECK(header_.kind >= static_cast<std::uint32_t>(FrameKind::kHello) &&
                    header_.kind <= static_cast<std::uint32_t>(FrameKind::kFailure) &&
                    header_.bytes <= kMaxPayloadBytes,
                BackendError,
                "TCP control " << what << ": garbled frame from rank " << peer_ << " (kind "
                               << header_.kind << ", " << header_.bytes << " bytes)");
      payload_.resize(static_cast<std::size_t>(header_.bytes));
    } else {
      payload_got_ += static_cast<std::size_t>(got);
    }
    if (payload_got_ == payload_.size()) {
      complete_ = true;
      return true;
    }
  }
}

void TcpLink::next_frame() {
  header_got_ = 0;
  payload_got_ = 0;
  payload_.clear();
  complete_ = false;
}

void TcpLink::fail_and_close(const std::string& reason) {
  if (fd_ < 0) return;
  const FrameHeader header{static_cast<std::uint32_t>(FrameKind::kFailure), 0, reason.size()};
  iovec parts[2] = {{const_cast<FrameHeader*>(&header), sizeof header},
                    {const_cast<char*>(reason.data()), reason.size()}};
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = 2;
  // A partial frame is cut short by the close: the peer then reports the
  // lost connection instead of the reason.
  (void)::sendmsg(fd_, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd_);
  fd_ = -1;
}

void receive_frames(const std::vector<TcpLink*>& links,
                    const std::vector<Clock::time_point>& deadlines, Clock::duration spin_for,
                    const char* what) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point spin_until = start + spin_for;
  std::vector<pollfd> waiting;
  for (;;) {
    bool all = true;
    for (TcpLink* link : links) {
      if (!link->receive(what)) {
        all = false;
      } else if (link->header().kind == static_cast<std::uint32_t>(FrameKind::kFailure)) {
        // Another rank gave up: which rank stopped answering is for the roll
        // call to tell (Controller::give_up).
        throw PeerSilent("TCP control " + std::string(what) + ": " + link->payload());
      }
    }
    if (all) return;
    const Clock::time_point now = Clock::now();
    if (now < spin_until) continue;
    waiting.clear();
    Clock::time_point earliest = Clock::time_point::max();
    for (std::size_t i = 0; i < links.size(); ++i) {
      if (links[i]->complete()) continue;
      HVD_CHECK(now < deadlines[i], PeerSilent,
                "TCP control " << what << ": rank " << links[i]->peer() << " did not answer within "
                               << std::chrono::duration<double>(deadlines[i] - start).count()
                               << " s (HOROVODCPP_GLOO_TIMEOUT_SECONDS; did it stop?)");
      waiting.push_back(pollfd{links[i]->fd(), POLLIN, 0});
      earliest = std::min(earliest, deadlines[i]);
    }
    // Returns when bytes (or a close) arrive, at the deadline, or on a signal.
    ::poll(waiting.data(), waiting.size(), remaining_ms(earliest));
  }
}

}  // namespace tcp
}  // namespace hvd
