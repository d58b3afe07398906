#include "runner/placement/network.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <climits>

namespace hvdrun {
namespace {

std::string short_name(const std::string& host) { return host.substr(0, host.find('.')); }

}  // namespace

bool is_local_host(const std::string& host) {
  if (host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0) return true;
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) == 0) {
    std::string mine = name;
    if (host == mine || host == short_name(mine) || short_name(host) == mine) return true;
  }
  ifaddrs* addrs = nullptr;
  if (getifaddrs(&addrs) != 0) return false;
  bool found = false;
  for (ifaddrs* a = addrs; a != nullptr && !found; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    socklen_t len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    char text[NI_MAXHOST];
    if (getnameinfo(a->ifa_addr, len, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0) {
      continue;
    }
    std::string addr = text;
    addr = addr.substr(0, addr.find('%'));  // fe80::1%eth0
    found = addr == host;
  }
  freeifaddrs(addrs);
  return found;
}

std::string interface_ipv4(const std::string& interface_name) {
  ifaddrs* addrs = nullptr;
  if (getifaddrs(&addrs) != 0) return "";
  std::string found;
  for (ifaddrs* a = addrs; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    bool loopback = std::string(a->ifa_name) == "lo";
    if (interface_name.empty() ? loopback : interface_name != a->ifa_name) continue;
    char text[INET_ADDRSTRLEN] = {};
    auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) == nullptr) continue;
    if (interface_name.empty() && std::string(text).rfind("127.", 0) == 0) continue;
    found = text;
  }
  freeifaddrs(addrs);
  return found;
}

// The local IPv4 address the kernel would use to reach `host` ("" if none).
std::string route_source_address(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &result) != 0 || result == nullptr) return "";
  std::string address;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd >= 0 && connect(fd, result->ai_addr, result->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof local;
    char text[INET_ADDRSTRLEN] = {};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        inet_ntop(AF_INET, &local.sin_addr, text, sizeof text) != nullptr) {
      address = text;
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(result);
  return address == "0.0.0.0" ? "" : address;
}

}  // namespace hvdrun
