#include "backend/gloo/tcp_controller.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "base/check.h"
#include "core/diagnostics/logging.h"
#include "core/negotiation/agree_on_errors.h"
#include "core/runtime/usable_cpus.h"
#include "store/job_auth.h"
#include "store/tcp_connect.h"

namespace hvd {
namespace {

using tcp::Clock;
using tcp::FrameKind;
using tcp::TcpLink;

constexpr int kRoot = 0;
constexpr const char* kSetup = "setup";

// A listening socket on `address`, port chosen by the system; its port in *port.
int listen_on(const std::string& address, int backlog, int* port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* list = nullptr;
  const int rc = ::getaddrinfo(address.c_str(), "0", &hints, &list);
  HVD_CHECK(rc == 0, BackendError,
            "TCP control: cannot use address " << address << ": " << ::gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(list, &::freeaddrinfo);
  const int fd = ::socket(list->ai_family, list->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          list->ai_protocol);
  HVD_CHECK(fd >= 0, BackendError, "TCP control: cannot create a socket: " << std::strerror(errno));
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (::bind(fd, list->ai_addr, list->ai_addrlen) != 0 || ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    const int error = errno;
    ::close(fd);
    HVD_THROW(BackendError,
              "TCP control: cannot listen on " << address << ": " << std::strerror(error));
  }
  *port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                            : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  return fd;
}

// What a child says first, once it has proved the key: its rank.
struct Hello {
  std::int64_t rank;
};

// A connection that has not proved the key yet.
struct Unproven {
  int fd;
  job_auth::ListenerSide auth;
  std::string proof;
  Clock::time_point by;
};

// How long a connection may take to prove the key (a child does so at once).
constexpr std::chrono::seconds kProveWithin{2};
// Connections kept waiting to prove it; beyond, the longest waiting go.
constexpr std::size_t kMaxUnproven = 64;

// A gathered message travels up as (rank, length, bytes).
void append_record(std::string& to, int rank, const std::string& message) {
  const std::int64_t header[2] = {rank, static_cast<std::int64_t>(message.size())};
  to.append(reinterpret_cast<const char*>(header), sizeof header);
  to.append(message);
}

std::vector<std::string> parse_records(const std::string& records, int size) {
  std::vector<std::string> messages(static_cast<std::size_t>(size));
  std::vector<bool> seen(static_cast<std::size_t>(size));
  std::size_t at = 0;
  std::int64_t header[2];
  while (at + sizeof header <= records.size()) {
    std::memcpy(header, records.data() + at, sizeof header);
    at += sizeof header;
    const std::int64_t rank = header[0], length = header[1];
    HVD_CHECK(rank >= 0 && rank < size && !seen[rank] && length >= 0 &&
                  static_cast<std::uint64_t>(length) <= records.size() - at,
              BackendError, "TCP control gather: garbled message record (rank " << rank << ")");
    seen[rank] = true;
    messages[rank].assign(records, at, static_cast<std::size_t>(length));
    at += static_cast<std::size_t>(length);
  }
  HVD_CHECK(at == records.size() && std::count(seen.begin(), seen.end(), true) == size,
            BackendError, "TCP control gather: messages are missing or garbled");
  return messages;
}

// bitwise_and's frames: a mismatch flag, then the words.
constexpr std::size_t kFlagBytes = sizeof(std::uint64_t);

void and_into(std::string& into, const std::string& from) {
  std::uint64_t flag, word, other;
  std::memcpy(&flag, into.data(), kFlagBytes);
  std::memcpy(&other, from.data(), kFlagBytes);
  flag |= other | (from.size() != into.size() ? 1 : 0);
  std::memcpy(into.data(), &flag, kFlagBytes);
  const std::size_t bytes = std::min(into.size(), from.size());
  for (std::size_t at = kFlagBytes; at + sizeof word <= bytes; at += sizeof word) {
    std::memcpy(&word, into.data() + at, sizeof word);
    std::memcpy(&other, from.data() + at, sizeof word);
    word &= other;
    std::memcpy(into.data() + at, &word, sizeof word);
  }
}

}  // namespace

// Its first child's line is the longest.
int TcpController::height_of(int rank) const {
  int height = 0;
  for (int r = rank; first_child_of(r) < topology_.size; r = first_child_of(r)) ++height;
  return height;
}

int TcpController::depth_of(int rank) const {
  int depth = 0;
  for (int r = rank; r != kRoot; r = parent_of(r)) ++depth;
  return depth;
}

TcpController::TcpController(const Topology& topology, const TcpControllerOptions& options)
    : topology_(topology),
      // Reading pays only while every rank of the host has a core.
      spin_for_(topology.local_size <= usable_cpus() ? std::chrono::microseconds(20)
                                                     : std::chrono::microseconds(0)),
      timeout_(options.timeout),
      fan_out_(options.fan_out) {
  HVD_CHECK(fan_out_ >= 1, InvalidArgument, "TCP control: fan-out " << fan_out_ << " < 1");
  const int size = topology.size, rank = topology.rank;
  const Clock::duration timeout = timeout_;
  // The rank next to a failure must report it before the others give up.
  const Clock::duration grace = std::clamp<Clock::duration>(
      timeout / 4, std::chrono::milliseconds(1), std::chrono::seconds(2));
  for (int child = first_child_of(rank); child < size && child < first_child_of(rank + 1);
       ++child) {
    child_patience_.push_back(timeout + grace * height_of(child));
  }
  parent_patience_ = timeout + grace * (height_of(kRoot) + depth_of(rank));
  deadlines_.resize(child_patience_.size());
}

std::unique_ptr<TcpController> TcpController::connect(Controller& setup,
                                                      const TcpControllerOptions& options,
                                                      const std::string& fallback) {
  const Topology& topology = setup.topology();
  std::unique_ptr<TcpController> controller(new TcpController(topology, options));
  if (topology.size == 1) return controller;

  // Every rank listens, then learns every rank's address and rank 0's token.
  std::string error, mine;
  int listener = -1;
  try {
    int port = 0;
    listener = listen_on(options.address, options.fan_out + 1, &port);
    mine = options.address + " " + std::to_string(port);
  } catch (const Error& e) {
    error = e.what();
  }
  std::string problems = agree_on_errors(setup, error);
  std::vector<std::string> addresses;
  std::string key;
  if (problems.empty()) {
    const std::vector<std::string> gathered = setup.gather_to_root(mine);
    // The key travels only through the setup controller (MPI, or the
    // store that itself admits only the job's processes).
    std::ostringstream table;
    if (topology.rank == kRoot) table << job_auth::new_secret();
    for (const std::string& address : gathered) table << "\n" << address;
    std::istringstream lines(setup.broadcast_from_root(table.str()));
    lines >> key;
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) addresses.push_back(line);
    }
    try {
      controller->connect_tree(listener, addresses, key);
    } catch (const std::exception& e) {
      error = e.what();
    }
    problems = agree_on_errors(setup, error);
  }
  if (listener >= 0) ::close(listener);
  if (!problems.empty()) {
    if (topology.rank == 0) {
      HVD_LOG(Warning) << "TCP control plane: " << problems << "using " << fallback;
    }
    return nullptr;
  }
  return controller;
}

void TcpController::connect_tree(int listener, const std::vector<std::string>& addresses,
                                 const std::string& key) {
  HVD_CHECK_EQ(addresses.size(), static_cast<std::size_t>(topology_.size), BackendError,
               "TCP control setup: wrong number of addresses");
  const Clock::time_point deadline = Clock::now() + timeout_;
  if (topology_.rank != kRoot) connect_to_parent(addresses, key, deadline);
  accept_children(listener, key, deadline);
  for (const auto& child : children_) child_links_.push_back(child.get());
}

void TcpController::connect_to_parent(const std::vector<std::string>& addresses,
                                      const std::string& key, Clock::time_point deadline) {
  const int parent = parent_of(topology_.rank);
  std::istringstream fields(addresses[parent]);
  std::string host;
  int port = 0;
  fields >> host >> port;
  const std::string peer = "rank " + std::to_string(parent) + " at " + addresses[parent];
  std::string error = "timed out";
  int fd = -1;
  // The parent listens already; a refused attempt (its backlog full, or
  // strangers crowding it) is retried.
  while (fd < 0 && Clock::now() < deadline) {
    fd = connect_once(host, port, AF_UNSPEC, deadline, &error);
    if (fd >= 0) {
      const job_auth::Outcome outcome = job_auth::prove_to_listener(fd, key, deadline, peer);
      if (outcome == job_auth::Outcome::kRefused) {
        ::close(fd);
        HVD_THROW(BackendError, peer << " refused this rank's proof of the job's key");
      }
      if (outcome == job_auth::Outcome::kBusy) {
        ::close(fd);
        fd = -1;
        error = "it was busy";
      }
    }
    if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  HVD_CHECK(fd >= 0, BackendError, "cannot connect to " << peer << ": " << error);
  parent_ = std::make_unique<TcpLink>(fd, parent);
  const Hello hello{topology_.rank};
  parent_->send(FrameKind::kHello, 0, &hello, sizeof hello, deadline, kSetup);
}

// The children, in whatever order they come. Each proves the key before it
// may say its rank; strangers are closed without holding up the others.
void TcpController::accept_children(int listener, const std::string& key,
                                    Clock::time_point deadline) {
  const int rank = topology_.rank;
  children_.resize(child_patience_.size());
  std::vector<Unproven> unproven;
  const auto drop = [&unproven](std::size_t i) {
    ::close(unproven[i].fd);
    unproven.erase(unproven.begin() + static_cast<std::ptrdiff_t>(i));
  };
  std::size_t connected = 0;
  while (connected < children_.size()) {
    const Clock::time_point now = Clock::now();
    for (std::size_t i = unproven.size(); i-- > 0;) {
      if (unproven[i].by <= now) drop(i);
    }
    Clock::time_point wake = deadline;
    std::vector<pollfd> fds{{listener, POLLIN, 0}};
    for (const Unproven& u : unproven) {
      fds.push_back({u.fd, POLLIN, 0});
      wake = std::min(wake, u.by);
    }
    HVD_CHECK(now < deadline, BackendError,
              "rank " << rank << " waited in vain for its children (ranks " << first_child_of(rank)
                      << " to " << first_child_of(rank) + children_.size() - 1 << ") to connect");
    const int ready = ::poll(fds.data(), fds.size(), remaining_ms(wake));
    if (ready <= 0) continue;  // EINTR or a deadline: checked above
    // Proofs first (fds[i + 1] is unproven[i]), then new connections.
    for (std::size_t i = unproven.size(); i-- > 0;) {
      if (fds[i + 1].revents == 0) continue;
      Unproven& u = unproven[i];
      char buffer[job_auth::kProofSize];
      const ssize_t n = ::recv(u.fd, buffer, job_auth::kProofSize - u.proof.size(), 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) {
        drop(i);
        continue;
      }
      u.proof.append(buffer, static_cast<std::size_t>(n));
      if (u.proof.size() < job_auth::kProofSize) continue;
      const std::optional<std::string> reply = u.auth.answer(u.proof);
      if (!reply || ::send(u.fd, reply->data(), reply->size(), MSG_NOSIGNAL) !=
                        static_cast<ssize_t>(reply->size())) {
        HVD_LOG(Warning) << "TCP control setup: closed a connection from "
                         << job_auth::peer_address(u.fd) << " that did not prove the job's key";
        drop(i);
        continue;
      }
      const int fd = u.fd;
      unproven.erase(unproven.begin() + static_cast<std::ptrdiff_t>(i));
      if (adopt_child(fd, deadline)) ++connected;
    }
    if (fds[0].revents & POLLIN) {
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) continue;
      job_auth::ListenerSide auth(key);
      const std::string challenge = auth.challenge();
      if (::send(fd, challenge.data(), challenge.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(challenge.size())) {
        ::close(fd);
        continue;
      }
      // From now: the poll may have waited long for this connection.
      unproven.push_back(
          {fd, std::move(auth), std::string(), std::min(deadline, Clock::now() + kProveWithin)});
      if (unproven.size() > kMaxUnproven) {
        const std::string busy = job_auth::ListenerSide::busy();
        (void)!::send(unproven.front().fd, busy.data(), busy.size(), MSG_NOSIGNAL);
        drop(0);
      }
    }
  }
}

// A child that proved the key says its rank; true when it is one of this
// rank's children not connected yet.
bool TcpController::adopt_child(int fd, Clock::time_point deadline) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto link = std::make_unique<TcpLink>(fd, -1);
  try {
    tcp::receive_frames({link.get()}, {std::min(deadline, Clock::now() + kProveWithin)},
                        Clock::duration(0), kSetup);
  } catch (const Error&) {
    return false;
  }
  Hello hello{};
  const std::string& payload = link->payload();
  if (link->header().kind != static_cast<std::uint32_t>(FrameKind::kHello) ||
      payload.size() != sizeof hello) {
    return false;
  }
  std::memcpy(&hello, payload.data(), sizeof hello);
  const std::int64_t index = hello.rank - first_child_of(topology_.rank);
  if (index < 0 || index >= static_cast<std::int64_t>(children_.size()) || children_[index]) {
    return false;
  }
  link->set_peer(static_cast<int>(hello.rank));
  link->next_frame();
  children_[index] = std::move(link);
  return true;
}

template <typename Collective>
auto TcpController::run(const char* what, Collective&& collective) {
  HVD_CHECK(broken_.empty(), RankFailure,
            "TCP control " << what << ": an earlier collective failed: " << broken_);
  ++round_;
  try {
    return collective();
  } catch (const InvalidArgument&) {
    throw;  // every rank throws it, in step
  } catch (const std::exception& e) {
    broken_ = e.what();
    if (parent_) parent_->fail_and_close(broken_);
    for (const auto& child : children_) child->fail_and_close(broken_);
    throw;
  }
}

void TcpController::check_round(TcpLink& link, const char* what) const {
  HVD_CHECK(link.header().kind == static_cast<std::uint32_t>(FrameKind::kData) &&
                link.header().round == round_,
            BackendError,
            "TCP control " << what << ": rank " << link.peer() << " is out of step (its collective "
                           << link.header().round << ", this rank's " << round_ << ")");
}

void TcpController::receive_from_children(const char* what) {
  const Clock::time_point now = Clock::now();
  for (std::size_t i = 0; i < deadlines_.size(); ++i) deadlines_[i] = now + child_patience_[i];
  tcp::receive_frames(child_links_, deadlines_, spin_for_, what);
  for (TcpLink* child : child_links_) check_round(*child, what);
}

std::string& TcpController::receive_from_parent(const char* what) {
  parent_->next_frame();
  tcp::receive_frames({parent_.get()}, {Clock::now() + parent_patience_}, spin_for_, what);
  check_round(*parent_, what);
  return parent_->payload();
}

void TcpController::send_to_parent(const std::string& payload, const char* what) {
  parent_->send(FrameKind::kData, round_, payload.data(), payload.size(),
                Clock::now() + parent_patience_, what);
}

void TcpController::send_to_children(const std::string& payload, const char* what) {
  const Clock::time_point now = Clock::now();
  for (std::size_t i = 0; i < children_.size(); ++i) {
    children_[i]->send(FrameKind::kData, round_, payload.data(), payload.size(),
                       now + child_patience_[i], what);
  }
}

std::vector<std::string> TcpController::gather_to_root(const std::string& message) {
  return run("gather", [&]() -> std::vector<std::string> {
    // Each rank sends up its subtree's messages.
    up_.clear();
    append_record(up_, topology_.rank, message);
    receive_from_children("gather");
    for (TcpLink* child : child_links_) {
      up_ += child->payload();
      child->next_frame();
    }
    if (topology_.rank == kRoot) return parse_records(up_, topology_.size);
    send_to_parent(up_, "gather");
    return {};
  });
}

std::string TcpController::broadcast_from_root(const std::string& message) {
  return run("broadcast", [&]() -> std::string {
    if (topology_.rank == kRoot) {
      send_to_children(message, "broadcast");
      return message;
    }
    std::string result = std::move(receive_from_parent("broadcast"));
    send_to_children(result, "broadcast");
    return result;
  });
}

void TcpController::bitwise_and(std::vector<std::uint64_t>& words) {
  const char* what = "bitwise AND";
  run(what, [&] {
    // Up: each subtree's AND (and whether some length differed); down: the result.
    const std::uint64_t no_mismatch = 0;
    up_.assign(reinterpret_cast<const char*>(&no_mismatch), kFlagBytes);
    up_.append(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(std::uint64_t));
    receive_from_children(what);
    for (TcpLink* child : child_links_) {
      HVD_CHECK(child->payload().size() >= kFlagBytes, BackendError,
                "TCP control " << what << ": garbled frame from rank " << child->peer());
      and_into(up_, child->payload());
      child->next_frame();
    }
    const std::string* result = &up_;
    if (topology_.rank != kRoot) {
      send_to_parent(up_, what);
      result = &receive_from_parent(what);
    }
    send_to_children(*result, what);
    std::uint64_t mismatch = 1;
    if (result->size() >= kFlagBytes) std::memcpy(&mismatch, result->data(), kFlagBytes);
    HVD_CHECK(mismatch == 0 && result->size() == up_.size(), InvalidArgument,
              "bitwise_and: the ranks passed bit vectors of different lengths (this rank "
                  << words.size() << " words)");
    std::memcpy(words.data(), result->data() + kFlagBytes, words.size() * sizeof(std::uint64_t));
  });
}

}  // namespace hvd
