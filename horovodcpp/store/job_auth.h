// Proving, on a fresh TCP connection, that both ends hold the job's secret
// before anything else is said: HMAC-SHA256 challenge-response each way
// (OpenSSL's libcrypto). The listener speaks first:
//
//   listener -> caller:   "hvdauth1" | listener nonce (32 B)
//   caller   -> listener: caller nonce (32 B) | HMAC(secret, "caller" | both nonces)
//   listener -> caller:   HMAC(secret, "listener" | both nonces)
//
// A listener that sheds load instead closes the connection, before its
// challenge or after a kReplySize "busy" marker: the caller tries again. A
// caller with the wrong secret gets nothing but the closed connection.
//
// The secret never crosses the wire, and fresh nonces on both sides make a
// recorded exchange worthless on another connection. The rendezvous store
// (hvdrun's, which the elastic driver and the ranks' failure reports use
// too) and the TCP control plane authenticate this way; docs/security.md
// says what is and is not protected.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace hvd {
namespace job_auth {

constexpr std::size_t kNonceSize = 32;
constexpr std::size_t kMacSize = 32;
constexpr std::size_t kChallengeSize = 8 + kNonceSize;  // magic + nonce
constexpr std::size_t kProofSize = kNonceSize + kMacSize;
constexpr std::size_t kReplySize = kMacSize;

// A fresh secret: 32 random bytes from the system's entropy, as 64 hex
// digits (printable, so that it travels in an environment variable).
std::string new_secret();

// The listener's half of one connection's exchange.
class ListenerSide {
 public:
  explicit ListenerSide(std::string secret);

  // What the listener sends first.
  std::string challenge() const;
  // Given the caller's kProofSize bytes: the listener's reply when the
  // caller holds the secret, nothing otherwise.
  std::optional<std::string> answer(const std::string& proof) const;
  // What a listener sends before closing a connection to shed load.
  static std::string busy();

 private:
  std::string secret_;
  std::string nonce_;
};

// The caller's half, on a connected non-blocking socket: reads the
// challenge, proves, and checks the listener's reply, all before
// `deadline`. A listener that closes the connection is not an error here:
// before its challenge, or after its busy marker, it sheds load (kBusy: try
// again); after the proof it refused this caller's secret (kRefused).
// Throws hvd::Error saying what failed and naming `peer` (hvd::Timeout when
// the deadline passed); a listener that proves another secret belongs to
// another job (hvd::Error).
enum class Outcome { kProved, kBusy, kRefused };
Outcome prove_to_listener(int fd, const std::string& secret,
                          std::chrono::steady_clock::time_point deadline, const std::string& peer);

// "1.2.3.4:5678" for a connected socket's far end ("unknown peer" if none).
std::string peer_address(int fd);

}  // namespace job_auth
}  // namespace hvd
