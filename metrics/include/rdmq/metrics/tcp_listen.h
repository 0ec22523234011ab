// ListenTcp: opens an Asio acceptor on "host:port" (host a name or an address, IPv6 in brackets;
// port 0: any free port) with SO_REUSEADDR, and listens. Shared by the broker's Asio front doors:
// the HTTP endpoint (HttpServer) and the Kafka listener.
#pragma once

// clang-format off
#include <utility>  // Boost 1.74's Asio uses std::exchange without including it (g++ 12, C++20)
#include <boost/asio/ip/tcp.hpp>
// clang-format on
#include <string>

#include "rdmq/common/status.h"

namespace rdmq::metrics {

// The bound address as host:port (the real port; IPv6 in brackets). Errors, their context
// "LISTEN: why": kInvalidArgument (not host:port, or the host does not resolve), kAlreadyExists
// (the address is taken), kUnavailable (any other refusal).
Result<std::string> ListenTcp(boost::asio::ip::tcp::acceptor& acceptor, const std::string& listen);

}  // namespace rdmq::metrics
