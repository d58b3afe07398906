// TcpStoreServer: the in-memory key-value server TcpStore clients talk to
// (run by hvdrun or by rank 0). One background thread serves every client
// with poll(); the destructor stops it and closes every connection.
#pragma once

#include <atomic>
#include <string>
#include <thread>

namespace hvd {

class TcpStoreServer {
 public:
  // Binds `bind_address`:`port` (port 0: any free port) and starts serving.
  // Throws hvd::Error when the address cannot be bound.
  explicit TcpStoreServer(const std::string& bind_address = "0.0.0.0", int port = 0);
  ~TcpStoreServer();

  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  // The port actually bound.
  int port() const { return port_; }

 private:
  void serve();

  int listen_fd_ = -1;
  int wake_read_fd_ = -1;
  int wake_write_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace hvd
