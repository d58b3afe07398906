#include "store/job_auth.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "base/check.h"
#include "store/tcp_connect.h"

namespace hvd {
namespace job_auth {
namespace {

constexpr char kMagic[] = "hvdauth1";  // 8 bytes on the wire, no terminator
constexpr char kCallerRole[] = "caller";
constexpr char kListenerRole[] = "listener";
constexpr char kBusy[] = "hvdauth1 busy: try again later";

std::string random_bytes(std::size_t n) {
  std::string bytes(n, '\0');
  HVD_CHECK(RAND_bytes(reinterpret_cast<unsigned char*>(&bytes[0]), static_cast<int>(n)) == 1,
            Error, "job authentication: the system's entropy source (OpenSSL RAND_bytes) failed");
  return bytes;
}

std::string mac(const std::string& secret, const char* role, const std::string& listener_nonce,
                const std::string& caller_nonce) {
  const std::string message = std::string(role) + listener_nonce + caller_nonce;
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HVD_CHECK(HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                 reinterpret_cast<const unsigned char*>(message.data()), message.size(), out,
                 &length) != nullptr &&
                length == kMacSize,
            Error, "job authentication: HMAC-SHA256 failed");
  return std::string(reinterpret_cast<const char*>(out), length);
}

bool same(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

using Clock = std::chrono::steady_clock;

// Waits for `events` on fd; false when the deadline passed.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready > 0) return true;
    if (ready == 0) return false;
    if (errno != EINTR) return true;  // the next send/recv reports the error
  }
}

void send_all(int fd, const std::string& data, Clock::time_point deadline,
              const std::string& peer) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      HVD_CHECK(wait_for(fd, POLLOUT, deadline), Timeout,
                "job authentication with " << peer << " timed out while sending");
    } else if (n < 0 && errno != EINTR) {
      HVD_THROW(Error, "job authentication with " << peer << ": " << std::strerror(errno));
    }
  }
}

// Reads `size` bytes; false when the peer closed the connection (or reset it) first.
bool recv_exactly(int fd, std::string* data, std::size_t size, Clock::time_point deadline,
                  const std::string& peer, const char* waiting_for) {
  data->assign(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::recv(fd, &(*data)[done], size - done, 0);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n == 0 || errno == ECONNRESET) {
      return false;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      HVD_CHECK(wait_for(fd, POLLIN, deadline), Timeout,
                peer << " did not send " << waiting_for << " in time");
    } else if (errno != EINTR) {
      HVD_THROW(Error, "job authentication with " << peer << ": " << std::strerror(errno));
    }
  }
  return true;
}

}  // namespace

std::string new_secret() {
  const std::string bytes = random_bytes(32);
  static const char digits[] = "0123456789abcdef";
  std::string hex;
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    hex.push_back(digits[byte >> 4]);
    hex.push_back(digits[byte & 15]);
  }
  return hex;
}

ListenerSide::ListenerSide(std::string secret)
    : secret_(std::move(secret)), nonce_(random_bytes(kNonceSize)) {}

std::string ListenerSide::challenge() const { return std::string(kMagic, 8) + nonce_; }

std::string ListenerSide::busy() {
  std::string marker(kBusy);
  marker.resize(kReplySize, ' ');
  return marker;
}

std::optional<std::string> ListenerSide::answer(const std::string& proof) const {
  if (proof.size() != kProofSize) return std::nullopt;
  const std::string caller_nonce = proof.substr(0, kNonceSize);
  if (!same(proof.substr(kNonceSize), mac(secret_, kCallerRole, nonce_, caller_nonce))) {
    return std::nullopt;
  }
  return mac(secret_, kListenerRole, nonce_, caller_nonce);
}

Outcome prove_to_listener(int fd, const std::string& secret, Clock::time_point deadline,
                          const std::string& peer) {
  std::string challenge;
  if (!recv_exactly(fd, &challenge, kChallengeSize, deadline, peer, "its challenge")) {
    return Outcome::kBusy;
  }
  HVD_CHECK(challenge.compare(0, 8, kMagic, 8) == 0, Error,
            peer << " is not a horovodcpp listener of this version (no authentication challenge)");
  const std::string listener_nonce = challenge.substr(8);
  const std::string caller_nonce = random_bytes(kNonceSize);
  send_all(fd, caller_nonce + mac(secret, kCallerRole, listener_nonce, caller_nonce), deadline,
           peer);
  std::string reply;
  if (!recv_exactly(fd, &reply, kReplySize, deadline, peer, "its proof of the job's secret")) {
    return Outcome::kRefused;
  }
  if (reply == ListenerSide::busy()) return Outcome::kBusy;
  HVD_CHECK(same(reply, mac(secret, kListenerRole, listener_nonce, caller_nonce)), Error,
            peer << " does not hold this job's secret: it belongs to another job");
  return Outcome::kProved;
}

std::string peer_address(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return "unknown peer";
  }
  char text[INET6_ADDRSTRLEN] = {};
  int port = 0;
  if (address.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
    port = ntohs(in.sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
    port = ntohs(in6.sin6_port);
  } else {
    return "unknown peer";
  }
  return std::string(text) + ":" + std::to_string(port);
}

}  // namespace job_auth
}  // namespace hvd
