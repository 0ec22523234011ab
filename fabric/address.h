// Bootstrap addresses: "scheme:rest" ("unix:/path", "tcp:host:port", "verbs:host:port") and the
// "host:port" part of tcp and verbs addresses (IPv6 hosts in brackets).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rdmq/common/status.h"

namespace rdmq::fabric::internal {

struct HostPort {
  std::string host;
  uint16_t port = 0;
};
// "host:port" or "[v6-host]:port"; the port may be 0. kInvalidArgument naming the address.
Result<HostPort> ParseHostPort(std::string_view s);
// The part after "scheme:"; kWrongProvider when the address has another scheme.
Result<std::string_view> StripScheme(std::string_view address, std::string_view scheme);
// `address` without a leading "scheme:" if it has one (listen options may be given either way).
std::string_view DropScheme(std::string_view address, std::string_view scheme);

}  // namespace rdmq::fabric::internal
