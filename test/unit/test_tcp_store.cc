// TcpStore + TcpStoreServer over 127.0.0.1: large values, timeouts naming
// the address, late servers, dead servers, bad clients, the job's secret
// (what every store does: test_store_conformance.cc).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "horovodcpp/errors.h"
#include "store/job_auth.h"
#include "store/tcp_store.h"
#include "store/tcp_store_protocol.h"
#include "store/tcp_store_server.h"

namespace hvd {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr const char* kHost = "127.0.0.1";
constexpr const char* kSecret = "this job's secret";

// A port nobody listens on right now (bound to 0, read back, closed).
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A raw socket to the server, for clients that break the protocol.
int RawConnect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// True when the server closed `fd` (recv sees EOF or a reset after what
// it sent, such as its challenge), false when it keeps it open for 2 s.
bool ClosedByPeer(int fd) {
  char buffer[256];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) continue;
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }
}

// A raw socket that has proved the secret: it may speak the protocol.
int ProvenConnect(int port) {
  const int fd = RawConnect(port);
  job_auth::prove_to_listener(fd, kSecret, Clock::now() + std::chrono::seconds(5), "the store");
  return fd;
}

class TcpStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<TcpStore> Client() {
    return std::make_unique<TcpStore>(kHost, server_.port(), milliseconds(2000), kSecret);
  }
  TcpStoreServer server_{kHost, 0, kSecret};
};

TEST_F(TcpStoreTest, RoundTripsBinaryEmptyAndOddKeys) {
  auto store = Client();
  const std::string binary("a\0b\xff\n\0", 6);
  store->set("binary", binary);
  store->set("empty", "");
  store->set("rank/0/addr", "10.0.0.1:1234");
  store->set(std::string("nul\0key", 7), "nul");
  EXPECT_EQ(store->get("binary", milliseconds(100)), binary);
  EXPECT_EQ(store->get("empty", milliseconds(100)), "");
  EXPECT_EQ(store->get("rank/0/addr", milliseconds(100)), "10.0.0.1:1234");
  EXPECT_EQ(store->get(std::string("nul\0key", 7), milliseconds(100)), "nul");
  store->set("binary", "overwritten");
  EXPECT_EQ(store->get("binary", milliseconds(100)), "overwritten");

  std::string large(8 << 20, '\0');
  for (std::size_t i = 0; i < large.size(); i += 4093) large[i] = static_cast<char>(i);
  store->set("large", large);
  EXPECT_EQ(Client()->get("large", milliseconds(1000)), large);
}

TEST_F(TcpStoreTest, TimeoutNamesTheAddress) {
  auto store = Client();
  try {
    store->get("missing/key", milliseconds(50));
    FAIL() << "get returned";
  } catch (const Timeout& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(server_.port())),
              std::string::npos)
        << e.what();
  }
}

TEST_F(TcpStoreTest, OversizedValueIsRejectedByTheClient) {
  auto store = Client();
  const std::string too_large((64u << 20) + 1, 'x');
  EXPECT_THROW(store->set("big", too_large), InvalidArgument);
  store->set("small", "ok");  // still usable
  EXPECT_EQ(store->get("small", milliseconds(100)), "ok");
}

TEST_F(TcpStoreTest, ServerClosesMisbehavingConnections) {
  {
    int fd = RawConnect(server_.port());
    // (At least a proof's length: shorter input waits for the handshake timeout.)
    const char garbage[] =
        "GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n";
    ASSERT_GT(::send(fd, garbage, sizeof(garbage) - 1, MSG_NOSIGNAL), 0);
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  {
    int fd = ProvenConnect(server_.port());
    std::string header(1, static_cast<char>(store_protocol::kSet));
    store_protocol::put_u32(&header, 3);
    store_protocol::put_u64(&header, store_protocol::kMaxValueSize + 1);  // over the bound
    header += "key";
    ASSERT_GT(::send(fd, header.data(), header.size(), MSG_NOSIGNAL), 0);
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  auto store = Client();  // others are still served
  store->set("after", "fine");
  EXPECT_EQ(store->get("after", milliseconds(100)), "fine");
}

TEST(TcpStoreConnect, ClientWaitsForALateServer) {
  const int port = FreePort();
  std::unique_ptr<TcpStoreServer> server;
  std::thread starter([&server, port] {
    std::this_thread::sleep_for(milliseconds(300));
    server = std::make_unique<TcpStoreServer>(kHost, port, kSecret);
  });
  const auto start = Clock::now();
  std::unique_ptr<TcpStore> store;
  EXPECT_NO_THROW(store = std::make_unique<TcpStore>(kHost, port, milliseconds(3000), kSecret));
  EXPECT_GE(Clock::now() - start, milliseconds(250));
  starter.join();
  ASSERT_TRUE(store);
  ASSERT_TRUE(server);
  EXPECT_EQ(server->port(), port);
  store->set("hello", "world");
  EXPECT_EQ(store->get("hello", milliseconds(100)), "world");
}

TEST(TcpStoreConnect, ConnectTimeoutNamesHostAndPort) {
  const int port = FreePort();
  const auto start = Clock::now();
  try {
    TcpStore store(kHost, port, milliseconds(300), kSecret);
    FAIL() << "connected to a port nobody listens on";
  } catch (const Timeout& e) {
    const auto waited = Clock::now() - start;
    EXPECT_GE(waited, milliseconds(300));
    EXPECT_LT(waited, milliseconds(2000));
    const std::string message = e.what();
    EXPECT_NE(message.find("could not reach the rendezvous store at 127.0.0.1:" +
                           std::to_string(port) + " within 0.3 s"),
              std::string::npos)
        << message;
  }
}

TEST(TcpStoreConnect, ServerDestructionDoesNotHangAndClientsFail) {
  auto server = std::make_unique<TcpStoreServer>(kHost, 0, kSecret);
  const int port = server->port();
  std::vector<std::unique_ptr<TcpStore>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<TcpStore>(kHost, port, milliseconds(2000), kSecret));
    clients.back()->set("client/" + std::to_string(i), "here");
  }
  // One client is polling for a key that never comes.
  std::atomic<bool> waiter_failed{false};
  std::thread waiter([&] {
    try {
      TcpStore(kHost, port, milliseconds(2000), kSecret).get("never", milliseconds(10000));
    } catch (const Timeout&) {
    } catch (const Error&) {
      waiter_failed = true;
    }
  });
  std::this_thread::sleep_for(milliseconds(50));

  const auto start = Clock::now();
  server.reset();
  EXPECT_LT(Clock::now() - start, milliseconds(1000));
  waiter.join();
  EXPECT_TRUE(waiter_failed);
  EXPECT_LT(Clock::now() - start, milliseconds(1000));

  for (auto& client : clients) {
    try {
      client->get("client/0", milliseconds(100));
      FAIL() << "a call after the server's end succeeded";
    } catch (const Timeout& e) {
      FAIL() << "expected a lost connection, got a timeout: " << e.what();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(client->set("x", "y"), Error);  // and every call after that
  }
}

// ---- The job's secret (store/job_auth.h) --------------------------------

// What the server sends on `fd` until it closes it (or 3 s pass: *closed false).
std::string ReadUntilClosed(int fd, bool* closed) {
  std::string got;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      got.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    *closed = n == 0 || (n < 0 && errno == ECONNRESET);
    return got;
  }
}

TEST_F(TcpStoreTest, ClientWithAnotherJobsSecretIsRefused) {
  try {
    TcpStore stranger(kHost, server_.port(), milliseconds(2000), "another job's secret");
    FAIL() << "the store served a client with the wrong secret";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("HOROVODCPP_JOB_SECRET"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server_.refused(), TcpStore::kRefusalsBelieved);
  auto store = Client();  // the job's clients are still served
  store->set("after", "fine");
  EXPECT_EQ(store->get("after", milliseconds(100)), "fine");
}

TEST_F(TcpStoreTest, ClientRefusesAStoreOfAnotherJob) {
  TcpStoreServer other(kHost, 0, "another job's secret");
  try {
    TcpStore store(kHost, other.port(), milliseconds(2000), kSecret);
    FAIL() << "connected to another job's store";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(other.port())),
              std::string::npos)
        << e.what();
  }
}

TEST_F(TcpStoreTest, RequestsBeforeTheProofAreNotServed) {
  Client()->set("job/addresses", "what a stranger wants");
  const int fd = RawConnect(server_.port());
  // A well-formed GET where the proof belongs, padded to a proof's length.
  std::string request(1, static_cast<char>(store_protocol::kGet));
  store_protocol::put_u32(&request, 13);
  store_protocol::put_u64(&request, 0);
  request += "job/addresses";
  request.resize(job_auth::kProofSize, '\0');
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  bool closed = false;
  const std::string got = ReadUntilClosed(fd, &closed);
  ::close(fd);
  EXPECT_TRUE(closed);
  EXPECT_EQ(got.size(), job_auth::kChallengeSize);  // the challenge, and nothing else
  EXPECT_EQ(got.find("what a stranger wants"), std::string::npos);
  EXPECT_EQ(server_.refused(), 1);
}

TEST(TcpStoreHandshake, IdleConnectionsAreClosedAfterTheHandshakeTimeout) {
  const milliseconds handshake(1000);  // (the default is 10 s)
  TcpStoreServer server(kHost, 0, kSecret, handshake);
  const int fd = RawConnect(server.port());
  timeval tv{4, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const auto start = Clock::now();
  bool closed = false;
  ReadUntilClosed(fd, &closed);
  ::close(fd);
  EXPECT_TRUE(closed);
  EXPECT_GE(Clock::now() - start, handshake - milliseconds(100));
  EXPECT_EQ(server.refused(), 1);
}

// Strangers flood the store with bad input while the job's clients count:
// every count arrives, the strangers are closed, and the server still serves.
TEST_F(TcpStoreTest, TheJobIsServedWhileStrangersFloodTheStore) {
  const int port = server_.port();
  std::atomic<bool> flooding{true};
  std::atomic<long long> stranger_connections{0};
  auto stranger = [&](int kind, unsigned seed) {
    std::vector<int> idle;
    unsigned state = seed;
    auto next = [&state] { return state = state * 1103515245u + 12345u; };
    while (flooding.load()) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(port));
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        continue;
      }
      ++stranger_connections;
      std::string bytes;
      if (kind == 0) {  // random bytes
        bytes.resize(1 + next() % 4096);
        for (char& c : bytes) c = static_cast<char>(next() >> 16);
      } else if (kind == 1) {  // a truncated proof, then silence
        bytes.assign(1 + next() % (job_auth::kProofSize - 1), 'p');
      } else if (kind == 2) {  // a request with a huge length prefix, unproven
        bytes.assign(1, static_cast<char>(store_protocol::kSet));
        store_protocol::put_u32(&bytes, 0xFFFFFFFFu);
        store_protocol::put_u64(&bytes, ~0ULL);
      }  // kind 3: connect and say nothing (slowloris)
      if (!bytes.empty()) ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (kind == 0 || kind == 2) {
        ::close(fd);
      } else {
        idle.push_back(fd);        // held open until the flood ends
        if (idle.size() >= 700) {  // two such strangers: more than the server keeps
          ::close(idle.front());
          idle.erase(idle.begin());
        }
      }
    }
    for (int fd : idle) ::close(fd);
  };
  std::vector<std::thread> strangers;
  for (int kind = 0; kind < 4; ++kind) strangers.emplace_back(stranger, kind, 17u + kind);

  constexpr int kClients = 4, kAdds = 100;
  std::vector<std::thread> job;
  for (int t = 0; t < kClients; ++t) {
    job.emplace_back([&] {
      for (int i = 0; i < kAdds; ++i) {
        // Fresh connections too: each must prove the secret amid the flood.
        std::unique_ptr<TcpStore> store = Client();
        store->add("count", 1);
      }
    });
  }
  for (auto& t : job) t.join();
  flooding = false;
  for (auto& t : strangers) t.join();

  EXPECT_EQ(Client()->add("count", 0), kClients * kAdds);
  EXPECT_GT(stranger_connections.load(), 100);
  // Every stranger was refused or is being refused; none was served.
  bool all_refused = false;
  for (int i = 0; i < 100 && !all_refused; ++i) {
    all_refused = server_.refused() >= stranger_connections.load();
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(all_refused) << server_.refused() << " of " << stranger_connections.load();
}

}  // namespace
}  // namespace hvd
