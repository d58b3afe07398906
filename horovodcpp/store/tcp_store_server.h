// TcpStoreServer: the in-memory key-value server TcpStore clients talk to
// (run by hvdrun). One background thread serves every client with poll();
// the destructor stops it and closes every connection. A connection is
// served only once it has proved that it holds the job's secret
// (store/job_auth.h); one that does not, or that does not finish within
// the handshake timeout (kHandshakeTimeout), is closed, and its peer
// address logged (a bounded number of times).
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace hvd {

class TcpStoreServer {
 public:
  // How long a new connection has to prove that it holds the secret.
  static constexpr std::chrono::milliseconds kHandshakeTimeout{10000};

  // Binds `bind_address`:`port` (port 0: any free port) and starts serving
  // clients that hold `secret` (not empty). Throws hvd::Error when the
  // address cannot be bound.
  TcpStoreServer(const std::string& bind_address, int port, std::string secret,
                 std::chrono::milliseconds handshake_timeout = kHandshakeTimeout);
  ~TcpStoreServer();

  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  // The port actually bound.
  int port() const { return port_; }
  // Connections closed so far for not proving the secret.
  long long refused() const { return refused_.load(); }

 private:
  void serve();

  int listen_fd_ = -1;
  int wake_read_fd_ = -1;
  int wake_write_fd_ = -1;
  int port_ = 0;
  std::string secret_;
  std::chrono::milliseconds handshake_timeout_;
  std::atomic<long long> refused_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace hvd
