// Stream sockets for the bootstrap connections: listening and connecting (Unix and TCP, with a
// connect timeout), and printable peer names. Every function reports the errno it met as a
// Status naming the address.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "posix.h"
#include "rdmq/common/status.h"

namespace rdmq::fabric::internal {

// Listen* return the bound address in `bound` ("path" or "host:port").
Result<UniqueFd> ListenUnix(const std::string& path);
Result<UniqueFd> ListenTcp(const std::string& host, uint16_t port, std::string* bound);
// Connected sockets, blocking again after the (non-blocking, timed) connect. TCP ones have
// TCP_NODELAY.
Result<UniqueFd> ConnectUnix(const std::string& path, std::chrono::milliseconds timeout);
Result<UniqueFd> ConnectTcp(const std::string& host, uint16_t port, std::chrono::milliseconds timeout);
// "host:port", "[v6]:port", "unix-peer" or "?".
std::string SocketPeerName(int fd);

}  // namespace rdmq::fabric::internal
