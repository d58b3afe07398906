#include "store/tcp_store_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/check.h"
#include "store/counter.h"
#include "store/job_auth.h"
#include "store/tcp_connect.h"
#include "store/tcp_store_protocol.h"

namespace hvd {
namespace {

namespace proto = store_protocol;
using Clock = std::chrono::steady_clock;

// Stop reading a client's requests while this much of its replies is unsent.
constexpr std::size_t kOutputHighWater = 1 << 20;
// Most bytes read from one client per poll round (fairness).
constexpr std::size_t kReadBudget = 4 << 20;
// At most this many connections wait to prove the secret; beyond it the
// longest waiting are closed (a client's proof takes well under a
// millisecond, and TcpStore tries again when closed before the challenge).
constexpr std::size_t kMaxUnproven = 1024;
constexpr int kAcceptsPerRound = 64;
// Refusals logged one by one; later ones are only counted.
constexpr long long kRefusalsLogged = 10;

struct Connection {
  int fd = -1;
  std::string in;
  std::string out;
  std::size_t out_off = 0;
  bool closing = false;
  // Until the client has proved the secret: the exchange, its deadline and
  // the peer's address for the log.
  std::unique_ptr<job_auth::ListenerSide> auth;
  Clock::time_point prove_by;
  std::string peer;

  std::size_t pending_out() const { return out.size() - out_off; }
};

void reply(Connection* c, proto::Status status, const std::string& payload) {
  c->out.push_back(static_cast<char>(status));
  proto::put_u64(&c->out, payload.size());
  c->out.append(payload);
}

class Handler {
 public:
  // Serves every complete request buffered in `c`; marks it closing when a
  // request is malformed or too large.
  void process(Connection* c) {
    std::size_t off = 0;
    while (!c->closing && c->pending_out() < kOutputHighWater &&
           c->in.size() - off >= proto::kRequestHeaderSize) {
      const char* header = c->in.data() + off;
      const auto op = static_cast<unsigned char>(header[0]);
      const std::uint64_t key_len = proto::get_u32(header + 1);
      const std::uint64_t value_len = proto::get_u64(header + 5);
      const bool valid = key_len <= proto::kMaxKeySize && value_len <= proto::kMaxValueSize &&
                         (op == proto::kSet || (op == proto::kGet && value_len == 0) ||
                          (op == proto::kAdd && value_len == 8));
      if (!valid) {
        c->closing = true;  // misbehaving or foreign client
        break;
      }
      const std::size_t total = proto::kRequestHeaderSize + key_len + value_len;
      if (c->in.size() - off < total) break;
      std::string key(header + proto::kRequestHeaderSize, key_len);
      const char* value = header + proto::kRequestHeaderSize + key_len;
      switch (op) {
        case proto::kSet:
          data_[std::move(key)].assign(value, value_len);
          reply(c, proto::kOk, std::string());
          break;
        case proto::kGet: {
          auto it = data_.find(key);
          if (it == data_.end()) {
            reply(c, proto::kNotFound, std::string());
          } else {
            reply(c, proto::kOk, it->second);
          }
          break;
        }
        case proto::kAdd: add(c, std::move(key), proto::decode_i64(value)); break;
      }
      off += total;
    }
    c->in.erase(0, off);
  }

 private:
  void add(Connection* c, std::string key, long long delta) {
    long long current = 0;
    auto it = data_.find(key);
    if (it != data_.end() && !parse_counter(it->second, &current)) {
      reply(c, proto::kError, "the stored value is not an integer");
      return;
    }
    long long updated = 0;
    if (__builtin_add_overflow(current, delta, &updated)) {
      reply(c, proto::kError,
            "the counter overflows (" + std::to_string(current) + " + " + std::to_string(delta) +
                ")");
      return;
    }
    data_[std::move(key)] = std::to_string(updated);
    reply(c, proto::kOk, proto::encode_i64(updated));
  }

  std::unordered_map<std::string, std::string> data_;
};

void read_from(Connection* c) {
  char buffer[64 * 1024];
  // Before its proof, a client has nothing else to say.
  std::size_t budget =
      c->auth ? job_auth::kProofSize - std::min(c->in.size(), job_auth::kProofSize) : kReadBudget;
  while (budget > 0) {
    ssize_t n = ::recv(c->fd, buffer, std::min(sizeof(buffer), budget), 0);
    if (n > 0) {
      c->in.append(buffer, static_cast<std::size_t>(n));
      budget -= std::min(budget, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    c->closing = true;  // peer closed (n == 0) or error
    return;
  }
}

void write_to(Connection* c) {
  while (c->pending_out() > 0) {
    ssize_t n = ::send(c->fd, c->out.data() + c->out_off, c->pending_out(), MSG_NOSIGNAL);
    if (n > 0) {
      c->out_off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    c->closing = true;
    return;
  }
  c->out.clear();
  c->out_off = 0;
}

// Accepts what waits, up to kAcceptsPerRound, so that a flood of
// connections does not keep the server from the ones it has.
void accept_some(int listen_fd, const std::string& secret,
                 std::chrono::milliseconds handshake_timeout,
                 std::vector<std::unique_ptr<Connection>>* conns) {
  for (int accepted = 0; accepted < kAcceptsPerRound; ++accepted) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        ::usleep(10 * 1000);  // out of descriptors: let clients finish first
      }
      return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->auth = std::make_unique<job_auth::ListenerSide>(secret);
    c->out = c->auth->challenge();
    c->prove_by = Clock::now() + handshake_timeout;
    c->peer = job_auth::peer_address(fd);
    write_to(c.get());
    conns->push_back(std::move(c));
  }
}

void refuse(Connection* c, const char* why, std::atomic<long long>* refused) {
  c->closing = true;
  const long long count = ++*refused;
  if (count <= kRefusalsLogged) {
    std::fprintf(stderr, "horovodcpp: rendezvous store: refused %s: %s%s\n", c->peer.c_str(), why,
                 count == kRefusalsLogged ? " (further refusals are counted, not logged)" : "");
  }
}

// Checks a client's proof once it is all there (or the client is gone).
void authenticate(Connection* c, std::atomic<long long>* refused) {
  if (c->in.size() < job_auth::kProofSize) {
    if (c->closing) refuse(c, "closed the connection before proving the job's secret", refused);
    return;
  }
  const std::optional<std::string> reply = c->auth->answer(c->in.substr(0, job_auth::kProofSize));
  if (!reply) {
    refuse(c, "no proof of the job's secret (another job's client, or not a horovodcpp client)",
           refused);
    return;
  }
  c->in.erase(0, job_auth::kProofSize);
  c->out.append(*reply);
  c->auth.reset();
}

// Closes the connections that did not prove the secret in time, and the
// longest waiting beyond kMaxUnproven; returns poll()'s timeout until the
// next deadline (-1: none).
int expire_unproven(const std::vector<std::unique_ptr<Connection>>& conns,
                    std::atomic<long long>* refused) {
  const Clock::time_point now = Clock::now();
  std::vector<Connection*> unproven;
  for (const auto& c : conns) {
    if (!c->auth || c->closing) continue;
    if (c->prove_by <= now) {
      refuse(c.get(), "did not prove the job's secret in time", refused);
    } else {
      unproven.push_back(c.get());
    }
  }
  if (unproven.size() > kMaxUnproven) {
    std::sort(unproven.begin(), unproven.end(),
              [](const Connection* a, const Connection* b) { return a->prove_by < b->prove_by; });
    for (std::size_t i = 0; i < unproven.size() - kMaxUnproven; ++i) {
      // Perhaps one of the job's, that tries again when it reads this.
      Connection* c = unproven[i];
      c->out.append(job_auth::ListenerSide::busy());
      write_to(c);
      refuse(c, "too many connections waiting to prove the job's secret", refused);
    }
    unproven.erase(unproven.begin(), unproven.end() - kMaxUnproven);
  }
  if (unproven.empty()) return -1;
  Clock::time_point next = unproven.front()->prove_by;
  for (const Connection* c : unproven) next = std::min(next, c->prove_by);
  return std::max(1, remaining_ms(next));
}

void close_finished(std::vector<std::unique_ptr<Connection>>& conns) {
  for (auto& c : conns) {
    if (c->closing) {
      ::close(c->fd);
      c.reset();
    }
  }
  conns.erase(std::remove(conns.begin(), conns.end(), nullptr), conns.end());
}

}  // namespace

TcpStoreServer::TcpStoreServer(const std::string& bind_address, int port, std::string secret,
                               std::chrono::milliseconds handshake_timeout)
    : secret_(std::move(secret)), handshake_timeout_(handshake_timeout) {
  HVD_CHECK(port >= 0 && port <= 65535, InvalidArgument,
            "TcpStoreServer: port " << port << " is out of range");
  HVD_CHECK(!secret_.empty(), InvalidArgument,
            "TcpStoreServer: no secret: every client must prove the job's secret");
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string port_text = std::to_string(port);
  int rc = ::getaddrinfo(bind_address.empty() ? nullptr : bind_address.c_str(), port_text.c_str(),
                         &hints, &list);
  HVD_CHECK(rc == 0, Error,
            "TcpStoreServer: cannot resolve " << bind_address << ": " << ::gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(list, &::freeaddrinfo);

  std::string last_error = "no IPv4 address";
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      last_error = std::strerror(errno);
      ::close(fd);
      continue;
    }
    listen_fd_ = fd;
    break;
  }
  HVD_CHECK(
      listen_fd_ >= 0, Error,
      "TcpStoreServer: cannot listen on " << bind_address << ":" << port << ": " << last_error);

  sockaddr_in bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.sin_port);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(listen_fd_);
    HVD_THROW(Error, "TcpStoreServer: pipe2 failed: " << std::strerror(err));
  }
  wake_read_fd_ = pipe_fds[0];
  wake_write_fd_ = pipe_fds[1];
  try {
    thread_ = std::thread([this] { serve(); });
  } catch (...) {
    ::close(listen_fd_);
    ::close(wake_read_fd_);
    ::close(wake_write_fd_);
    throw;
  }
}

TcpStoreServer::~TcpStoreServer() {
  stop_.store(true);
  const char byte = 1;
  ssize_t ignored = ::write(wake_write_fd_, &byte, 1);
  (void)ignored;
  if (thread_.joinable()) thread_.join();
  if (refused_.load() > kRefusalsLogged) {
    std::fprintf(stderr, "horovodcpp: rendezvous store: refused %lld connections in all\n",
                 refused_.load());
  }
  ::close(listen_fd_);
  ::close(wake_read_fd_);
  ::close(wake_write_fd_);
}

void TcpStoreServer::serve() {
  Handler handler;
  std::vector<std::unique_ptr<Connection>> conns;
  std::vector<pollfd> fds;
  while (!stop_.load()) {
    const int timeout = expire_unproven(conns, &refused_);
    close_finished(conns);
    fds.clear();
    fds.push_back({wake_read_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const auto& c : conns) {
      short events = 0;
      if (c->pending_out() < kOutputHighWater) events |= POLLIN;
      if (c->pending_out() > 0) events |= POLLOUT;
      fds.push_back({c->fd, events, 0});
    }
    int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "horovodcpp: TcpStoreServer: poll failed: %s\n", std::strerror(errno));
      break;
    }
    if (fds[0].revents != 0 || stop_.load()) break;
    // fds[i + 2] belongs to conns[i]; accepting appends, so handle those first.
    for (std::size_t i = 0; i + 2 < fds.size(); ++i) {
      Connection* c = conns[i].get();
      const short revents = fds[i + 2].revents;
      if (revents == 0) continue;
      try {
        if (revents & POLLNVAL) c->closing = true;
        if (!c->closing && (revents & (POLLIN | POLLHUP | POLLERR))) read_from(c);
        if (c->auth) authenticate(c, &refused_);
        // Serve, send, and go on while the replies drain at once (requests
        // beyond the output high-water mark wait in `in`).
        while (!c->closing) {
          const std::size_t buffered = c->in.size();
          if (!c->auth) handler.process(c);
          if (!c->closing && c->pending_out() > 0) write_to(c);
          if (c->auth || c->pending_out() > 0 || c->in.size() == buffered) break;
        }
      } catch (const std::bad_alloc&) {
        c->closing = true;
      }
    }
    close_finished(conns);
    if (fds[1].revents & POLLIN) {
      try {
        accept_some(listen_fd_, secret_, handshake_timeout_, &conns);
      } catch (const std::exception&) {
        // Out of memory or entropy: the clients waiting retry.
      }
    }
  }
  for (auto& c : conns) ::close(c->fd);
}

}  // namespace hvd
