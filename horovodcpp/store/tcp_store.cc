#include "store/tcp_store.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "base/check.h"
#include "store/job_auth.h"
#include "store/tcp_connect.h"
#include "store/tcp_store_protocol.h"

namespace hvd {
namespace {

namespace proto = store_protocol;
using Clock = std::chrono::steady_clock;

}  // namespace

TcpStore::TcpStore(std::string host, int port, std::chrono::milliseconds connect_timeout,
                   std::string secret)
    : host_(std::move(host)), port_(port), secret_(std::move(secret)) {
  HVD_CHECK(port_ > 0 && port_ <= 65535, InvalidArgument,
            "TcpStore: port " << port_ << " of the rendezvous store is out of range");
  HVD_CHECK(!secret_.empty(), InvalidArgument,
            "TcpStore: no job secret for the rendezvous store at "
                << address() << " (HOROVODCPP_JOB_SECRET: hvdrun sets it for its ranks)");
  const auto deadline = Clock::now() + connect_timeout;
  auto pause = std::chrono::milliseconds(10);
  std::string last_error = "connect timed out";
  for (;;) {
    fd_ = connect_and_prove(deadline, &last_error);
    if (fd_ >= 0) return;
    const auto now = Clock::now();
    if (now >= deadline) {
      HVD_THROW(Timeout, "TcpStore: could not reach the rendezvous store at "
                             << address() << " within " << connect_timeout.count() / 1000.0
                             << " s (last error: " << last_error << ")");
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

int TcpStore::connect_and_prove(Clock::time_point deadline, std::string* error) {
  const int fd = connect_once(host_, port_, AF_INET, deadline, error);
  if (fd < 0) return -1;
  job_auth::Outcome outcome;
  try {
    // Within the deadline, but never less than a second: a busy server
    // answers late.
    outcome = job_auth::prove_to_listener(
        fd, secret_, std::max(deadline, Clock::now() + std::chrono::seconds(1)),
        "the rendezvous store at " + address());
  } catch (const Error& e) {
    ::close(fd);
    HVD_THROW(Error, "TcpStore: " << e.what());
  }
  if (outcome == job_auth::Outcome::kProved) {
    refusals_ = 0;
    return fd;
  }
  ::close(fd);
  if (outcome == job_auth::Outcome::kRefused && ++refusals_ >= kRefusalsBelieved) {
    HVD_THROW(Error, "TcpStore: the rendezvous store at "
                         << address()
                         << " refused this process: its secret is not the job's "
                            "(HOROVODCPP_JOB_SECRET must be the one hvdrun gave the job)");
  }
  *error = "the server was busy (it closed the connection during authentication)";
  return -1;
}

std::string TcpStore::address() const { return host_ + ":" + std::to_string(port_); }

void TcpStore::lose(const std::string& what, const std::string& reason) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  lost_reason_ = reason;
  HVD_THROW(Error, "TcpStore: lost the connection to the rendezvous store at "
                       << address() << " during " << what << ": " << reason);
}

void TcpStore::send_all(const std::string& data, const std::string& what,
                        Clock::time_point deadline) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      const int rc = ::poll(&p, 1, remaining_ms(deadline));
      if (rc == 0) {
        ::close(fd_);
        fd_ = -1;  // a partial request was sent: reconnect for the next call
        HVD_THROW(Timeout, "TcpStore: the rendezvous store at " << address() << " did not accept "
                                                                << what << " in time");
      }
      continue;
    }
    lose(what, std::strerror(errno));
  }
}

void TcpStore::recv_all(char* data, std::size_t size, const std::string& what,
                        Clock::time_point deadline) {
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::recv(fd_, data + done, size - done, 0);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) lose(what, "the server closed the connection (did it exit?)");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd p{fd_, POLLIN, 0};
      const int rc = ::poll(&p, 1, remaining_ms(deadline));
      if (rc == 0) {
        ::close(fd_);
        fd_ = -1;  // a reply is still due: reconnect for the next call
        HVD_THROW(Timeout, "TcpStore: no reply from the rendezvous store at "
                               << address() << " to " << what << " in time");
      }
      continue;
    }
    lose(what, std::strerror(errno));
  }
}

void TcpStore::check_sizes(const std::string& key, std::size_t value_size, const char* what) const {
  HVD_CHECK(key.size() <= proto::kMaxKeySize, InvalidArgument,
            "TcpStore: " << what << ": the key is " << key.size() << " bytes, over the limit of "
                         << proto::kMaxKeySize);
  HVD_CHECK(value_size <= proto::kMaxValueSize, InvalidArgument,
            "TcpStore: " << what << "('" << key << "'): the value is " << value_size
                         << " bytes, over the limit of " << proto::kMaxValueSize);
}

TcpStore::Reply TcpStore::call(unsigned char op, const std::string& key, const std::string& value,
                               const char* op_name, Clock::time_point deadline) {
  const std::string what = std::string(op_name) + "('" + key + "')";
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) {
    if (!lost_reason_.empty()) {
      HVD_THROW(Error, "TcpStore: " << what << ": the connection to the rendezvous store at "
                                    << address() << " was lost earlier: " << lost_reason_);
    }
    // Dropped after a timeout: the server may only be slow, so reconnect.
    std::string error;
    fd_ = connect_and_prove(deadline, &error);
    if (fd_ < 0) {
      lost_reason_ = "reconnecting failed: " + error;
      HVD_THROW(Error, "TcpStore: " << what << ": cannot reconnect to the rendezvous store at "
                                    << address() << ": " << error);
    }
  }

  std::string header;
  header.reserve(proto::kRequestHeaderSize + key.size());
  header.push_back(static_cast<char>(op));
  proto::put_u32(&header, static_cast<std::uint32_t>(key.size()));
  proto::put_u64(&header, value.size());
  header.append(key);
  send_all(header, what, deadline);
  if (!value.empty()) send_all(value, what, deadline);

  char reply_header[proto::kReplyHeaderSize];
  recv_all(reply_header, sizeof(reply_header), what, deadline);
  Reply reply;
  reply.status = static_cast<unsigned char>(reply_header[0]);
  const std::uint64_t size = proto::get_u64(reply_header + 1);
  if (reply.status > proto::kError || size > proto::kMaxValueSize) {
    lose(what, "malformed reply (is " + address() + " a horovodcpp rendezvous store?)");
  }
  reply.payload.resize(size);
  if (size > 0) recv_all(&reply.payload[0], size, what, deadline);
  if (reply.status == proto::kError) {
    HVD_THROW(InvalidArgument, "TcpStore: " << what << " failed at the rendezvous store at "
                                            << address() << ": " << reply.payload);
  }
  return reply;
}

void TcpStore::set(const std::string& key, const std::string& value) {
  check_sizes(key, value.size(), "set");
  call(proto::kSet, key, value, "set", Clock::now() + io_timeout_);
}

std::string TcpStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  check_sizes(key, 0, "get");
  const auto deadline = Clock::now() + timeout;
  // One exchange may overrun the deadline by this much, so that a get with
  // a short timeout still gets an answer from a busy server.
  const auto grace = std::chrono::milliseconds(100);
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    Reply reply =
        call(proto::kGet, key, std::string(), "get", std::max(deadline, Clock::now() + grace));
    if (reply.status == proto::kOk) return std::move(reply.payload);
    const auto now = Clock::now();
    if (now >= deadline) {
      HVD_THROW(Timeout, "TcpStore: key '" << key << "' was not set in the rendezvous store at "
                                           << address() << " within " << timeout.count() << " ms");
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

long long TcpStore::add(const std::string& key, long long delta) {
  check_sizes(key, 8, "add");
  Reply reply = call(proto::kAdd, key, proto::encode_i64(delta), "add", Clock::now() + io_timeout_);
  if (reply.status != proto::kOk || reply.payload.size() != 8) {
    std::lock_guard<std::mutex> lock(mutex_);
    lose("add('" + key + "')", "malformed reply");
  }
  return proto::decode_i64(reply.payload.data());
}

}  // namespace hvd
