// Connecting a TCP client within a deadline: the rendezvous store's client
// and the TCP control plane (backend/tcp) both use it.
#pragma once

#include <chrono>
#include <string>

namespace hvd {

// Milliseconds left until `deadline`, rounded up, for poll(); 0 once passed.
int remaining_ms(std::chrono::steady_clock::time_point deadline);

// Resolves `host` (addresses of `family`: AF_INET, AF_UNSPEC, ...) and tries
// each address once: a non-blocking descriptor with TCP_NODELAY, or -1 with
// `error` set.
int connect_once(const std::string& host, int port, int family,
                 std::chrono::steady_clock::time_point deadline, std::string* error);

}  // namespace hvd
