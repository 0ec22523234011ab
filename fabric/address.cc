#include "address.h"

#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal {

Result<HostPort> ParseHostPort(std::string_view s) {
  HostPort hp;
  std::string_view port;
  if (!s.empty() && s.front() == '[') {
    const size_t close = s.find(']');
    if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      return Status(Errc::kInvalidArgument, "bad address '" + std::string(s) + "' (want [v6-host]:port)");
    }
    hp.host = std::string(s.substr(1, close - 1));
    port = s.substr(close + 2);
  } else {
    const size_t colon = s.rfind(':');
    if (colon == std::string_view::npos) {
      return Status(Errc::kInvalidArgument, "bad address '" + std::string(s) + "' (want host:port)");
    }
    hp.host = std::string(s.substr(0, colon));
    port = s.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5) {
    return Status(Errc::kInvalidArgument, "bad port in address '" + std::string(s) + "'");
  }
  uint32_t p = 0;
  for (char c : port) {
    if (c < '0' || c > '9')
      return Status(Errc::kInvalidArgument, "bad port in address '" + std::string(s) + "'");
    p = p * 10 + static_cast<uint32_t>(c - '0');
  }
  if (p > 65535)
    return Status(Errc::kInvalidArgument, "port out of range in address '" + std::string(s) + "'");
  hp.port = static_cast<uint16_t>(p);
  return hp;
}

Result<std::string_view> StripScheme(std::string_view address, std::string_view scheme) {
  if (address.size() <= scheme.size() || address.substr(0, scheme.size()) != scheme ||
      address[scheme.size()] != ':') {
    return Status(FabricErrc::kWrongProvider,
                  "address '" + std::string(address) + "' is not a " + std::string(scheme) + ": address");
  }
  return address.substr(scheme.size() + 1);
}

std::string_view DropScheme(std::string_view address, std::string_view scheme) {
  if (address.size() > scheme.size() && address.substr(0, scheme.size()) == scheme &&
      address[scheme.size()] == ':') {
    address.remove_prefix(scheme.size() + 1);
  }
  return address;
}

}  // namespace rdmq::fabric::internal
