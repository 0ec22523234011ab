#include "socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace rdmq::fabric::internal {

Result<UniqueFd> ListenUnix(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return Status(Errc::kInvalidArgument, "unix socket path '" + path + "' is empty or longer than " +
                                              std::to_string(sizeof(addr.sun_path) - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::FromErrno(errno, "socket(AF_UNIX)");
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
    ::unlink(path.c_str());  // stale, from a dead process
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Status::FromErrno(errno, "bind unix socket " + path);
  }
  if (::listen(fd.get(), 128) != 0) return Status::FromErrno(errno, "listen on " + path);
  return fd;
}

namespace {
Result<addrinfo*> Resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) {
    return Status(Errc::kInvalidArgument, "cannot resolve '" + host + "': " + ::gai_strerror(rc));
  }
  return res;
}

// Tries the addresses `host:port` resolves to in turn: a socket for one, then `use(fd, address)`.
// The first socket that `use` is content with (OK) is returned, else the last error.
template <class F>
Result<UniqueFd> FirstAddress(const std::string& host, uint16_t port, bool passive, F&& use) {
  RDMQ_ASSIGN_OR_RETURN(addrinfo * res, Resolve(host, port, passive));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, &::freeaddrinfo);
  Status last(Errc::kInvalidArgument, "no address for '" + host + "'");
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      last = Status::FromErrno(errno, "socket for " + host);
      continue;
    }
    Status s = use(fd.get(), *ai);
    if (s.ok()) return fd;
    last = std::move(s);
  }
  return last;
}

std::string FormatSockaddr(const sockaddr* sa) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  if (sa->sa_family == AF_UNIX) return "unix-peer";
  return "?";
}
}  // namespace

std::string SocketPeerName(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return FormatSockaddr(reinterpret_cast<sockaddr*>(&ss));
}

Result<UniqueFd> ListenTcp(const std::string& host, uint16_t port, std::string* bound) {
  return FirstAddress(host, port, true, [&](int fd, const addrinfo& ai) {
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai.ai_addr, ai.ai_addrlen) != 0) {
      return Status::FromErrno(errno, "bind " + host + ":" + std::to_string(port));
    }
    if (::listen(fd, 128) != 0)
      return Status::FromErrno(errno, "listen on " + host + ":" + std::to_string(port));
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
    *bound = FormatSockaddr(reinterpret_cast<sockaddr*>(&ss));
    return Status::Ok();
  });
}

namespace {
Status WaitConnected(int fd, std::chrono::milliseconds timeout, const std::string& what) {
  pollfd p{fd, POLLOUT, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) return Status(Errc::kTimeout, "connect to " + what + " timed out");
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return Status::FromErrno(err, "connect to " + what);
  return Status::Ok();
}
Status ConnectWithTimeout(int fd, const sockaddr* sa, socklen_t len, std::chrono::milliseconds timeout,
                          const std::string& what) {
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  Status s;
  if (::connect(fd, sa, len) != 0) {
    if (errno == EINPROGRESS || errno == EAGAIN) {
      s = WaitConnected(fd, timeout, what);
    } else {
      s = Status::FromErrno(errno, "connect to " + what);
    }
  }
  ::fcntl(fd, F_SETFL, flags);
  return s;
}
}  // namespace

Result<UniqueFd> ConnectUnix(const std::string& path, std::chrono::milliseconds timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return Status(Errc::kInvalidArgument, "unix socket path '" + path + "' is empty or too long");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::FromErrno(errno, "socket(AF_UNIX)");
  RDMQ_RETURN_IF_ERROR(
      ConnectWithTimeout(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr, timeout, "unix:" + path));
  return fd;
}

Result<UniqueFd> ConnectTcp(const std::string& host, uint16_t port, std::chrono::milliseconds timeout) {
  return FirstAddress(host, port, false, [&](int fd, const addrinfo& ai) {
    RDMQ_RETURN_IF_ERROR(
        ConnectWithTimeout(fd, ai.ai_addr, ai.ai_addrlen, timeout, host + ":" + std::to_string(port)));
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return Status::Ok();
  });
}

}  // namespace rdmq::fabric::internal
