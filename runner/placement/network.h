// This machine on the network: whether a host name is this machine, and
// the IPv4 addresses other hosts can reach hvdrun at.
#pragma once

#include <string>

namespace hvdrun {

// True for localhost, 127.x, this machine's hostname and the addresses of
// its network interfaces.
bool is_local_host(const std::string& host);

// The IPv4 address of interface `interface_name`; with "", the first
// address that is not loopback. "" if there is none.
std::string interface_ipv4(const std::string& interface_name);

// The local IPv4 address the kernel would use to reach `host` ("" if none).
std::string route_source_address(const std::string& host);

}  // namespace hvdrun
