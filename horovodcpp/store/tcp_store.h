// TcpStore: a Store client of a TcpStoreServer (see tcp_store_protocol.h
// for the wire format). One connection per client, which first proves that
// this process holds the job's secret (store/job_auth.h); calls from several
// threads are serialized. A lost connection makes every later call throw.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "store/store.h"

namespace hvd {

class TcpStore : public Store {
 public:
  // Connects, retrying until `connect_timeout` (the server may start
  // later); then throws hvd::Timeout naming host:port. Throws hvd::Error
  // when the server does not take `secret` as its job's.
  TcpStore(std::string host, int port, std::chrono::milliseconds connect_timeout,
           std::string secret);
  ~TcpStore() override;

  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  long long add(const std::string& key, long long delta) override;

  // How long set/add wait for the server's reply (default 60 s).
  void set_io_timeout(std::chrono::milliseconds timeout) { io_timeout_ = timeout; }

  // Refusals of the secret before the client believes them (a server with
  // a bad moment closes a connection too).
  static constexpr int kRefusalsBelieved = 3;

  // "host:port", as used in error messages.
  std::string address() const;

 private:
  struct Reply {
    unsigned char status = 0;
    std::string payload;
  };
  // One request/reply exchange; the reply must arrive before `deadline`.
  // Throws hvd::Error when the connection is (or was) lost, hvd::Timeout
  // (and drops the connection) when the deadline passes.
  Reply call(unsigned char op, const std::string& key, const std::string& value, const char* what,
             std::chrono::steady_clock::time_point deadline);
  void send_all(const std::string& data, const std::string& what,
                std::chrono::steady_clock::time_point deadline);
  void recv_all(char* data, std::size_t size, const std::string& what,
                std::chrono::steady_clock::time_point deadline);
  [[noreturn]] void lose(const std::string& what, const std::string& reason);
  void check_sizes(const std::string& key, std::size_t value_size, const char* what) const;
  // Connects once and proves the secret: the descriptor, or -1 with
  // `error` set when it may be tried again; throws once the server has
  // refused the secret kRefusalsBelieved times, or proved another one.
  int connect_and_prove(std::chrono::steady_clock::time_point deadline, std::string* error);

  std::string host_;
  int port_;
  std::string secret_;
  int refusals_ = 0;  // a server shedding load closes a connection before the proof too
  int fd_ = -1;
  std::string lost_reason_;  // why the connection is gone, when fd_ < 0
  std::chrono::milliseconds io_timeout_{60000};
  std::mutex mutex_;
};

}  // namespace hvd
