#include "conn.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"

namespace rdmq::fabric::internal {

namespace asio = boost::asio;

// ---------------------------------------------------------------------------------- Agent

Agent::Agent(std::string name) : guard_(asio::make_work_guard(io_)) {
  thread_ = std::thread([this, name = std::move(name)] {
    thread_id_.store(std::this_thread::get_id());
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    io_.run();
  });
}

Agent::~Agent() { Stop(); }

void Agent::Stop() {
  guard_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

void Agent::Post(std::function<void()> f) { asio::post(io_, std::move(f)); }

// ---------------------------------------------------------------------------------- Conn

namespace {
// Puts `n` fds into `msg` as one SCM_RIGHTS message using `cbuf` (CMSG_SPACE(kMaxFrameFds ints)).
void AttachRights(msghdr& msg, char* cbuf, const int* fds, size_t n) {
  auto* c = reinterpret_cast<cmsghdr*>(cbuf);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * n);
  std::memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
  msg.msg_control = cbuf;
  msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
}
}  // namespace

std::shared_ptr<Conn> Conn::Create(Agent& agent, UniqueFd fd, std::string peer) {
  return std::shared_ptr<Conn>(new Conn(agent, std::move(fd), std::move(peer)));
}

Conn::Conn(Agent& agent, UniqueFd fd, std::string peer)
    : agent_(agent), fd_(fd.get()), sd_(agent.io(), fd.release()), peer_(std::move(peer)) {
  in_.resize(256 * 1024);
}

Conn::~Conn() {
  boost::system::error_code ec;
  sd_.close(ec);
}

void Conn::Start(std::shared_ptr<ConnHandler> handler) {
  {
    std::lock_guard lk(handler_mu_);
    handler_ = std::move(handler);
  }
  auto self = shared_from_this();
  agent_.Post([self] { self->ArmRead(); });
}

void Conn::SetHandler(std::shared_ptr<ConnHandler> handler) {
  std::lock_guard lk(handler_mu_);
  handler_ = std::move(handler);
}

void Conn::ClearHandler() {
  std::shared_ptr<ConnHandler> old;
  {
    std::lock_guard lk(handler_mu_);
    old = std::move(handler_);
  }
}

void Conn::ArmRead() {
  std::lock_guard lk(mu_);
  if (finished_) return;
  auto self = shared_from_this();
  sd_.async_wait(asio::posix::stream_descriptor::wait_read, [self](const boost::system::error_code& ec) {
    if (ec) {
      if (ec != asio::error::operation_aborted) self->Fail(Status(FabricErrc::kPeerGone, ec.message()));
      return;
    }
    self->OnReadable();
  });
}

void Conn::OnReadable() {
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxFrameFds * 4)];
  for (int round = 0; round < 64; ++round) {
    if (in_.size() - in_end_ < 64 * 1024) {
      // Make room: move unconsumed bytes to the front, or grow.
      if (in_begin_ > 0) {
        std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
        in_end_ -= in_begin_;
        in_begin_ = 0;
      }
      if (in_.size() - in_end_ < 64 * 1024) in_.resize(in_.size() * 2);
    }
    iovec iov{in_.data() + in_end_, in_.size() - in_end_};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof cbuf;
    const ssize_t n = ::recvmsg(fd_, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      Fail(Status::FromErrno(errno, "recvmsg from " + peer_).WithContext("connection lost"));
      return;
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
          int fd;
          std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
          in_fds_.emplace_back(fd);
        }
      }
    }
    if (n == 0) {
      Fail(Status(FabricErrc::kPeerGone, "peer " + peer_ + " closed the connection"));
      return;
    }
    in_end_ += static_cast<size_t>(n);
    ParseFrames();
    if (finished_ || closed()) break;
    if (static_cast<size_t>(n) < iov.iov_len) break;  // drained the socket
  }
  {
    std::lock_guard lk(mu_);
    if (!finished_ && !out_.empty() && !write_armed_) {
      if (FlushLocked() && !out_.empty()) ArmWriteLocked();
    }
  }
  if (closed() && !finished_) {
    // Close() was called: the shutdown makes the socket readable with EOF; keep reading.
  }
  ArmRead();
}

void Conn::ParseFrames() {
  {
    std::lock_guard lk(mu_);
    dispatching_ = true;
  }
  while (in_end_ - in_begin_ >= kFrameHeaderSize) {
    const std::byte* h = in_.data() + in_begin_;
    const uint32_t len = coding::LoadLE<uint32_t>(h);
    const auto type = static_cast<uint8_t>(h[4]);
    const auto nfds = static_cast<uint8_t>(h[5]);
    const uint16_t flags = coding::LoadLE<uint16_t>(h + 6);
    if (len > kMaxFramePayload || nfds > kMaxFrameFds) {
      Fail(Status(FabricErrc::kProtocol, "frame of " + std::to_string(len) + " bytes with " +
                                             std::to_string(nfds) + " fds from " + peer_));
      return;
    }
    if (in_end_ - in_begin_ < kFrameHeaderSize + len) {
      if (in_.size() < kFrameHeaderSize + len + 64 * 1024) {
        std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
        in_end_ -= in_begin_;
        in_begin_ = 0;
        in_.resize(kFrameHeaderSize + len + 64 * 1024);
      }
      break;
    }
    std::vector<UniqueFd> fds;
    if (nfds > in_fds_.size()) {
      Fail(Status(FabricErrc::kProtocol, "frame announces " + std::to_string(nfds) + " fds but " +
                                             std::to_string(in_fds_.size()) + " arrived from " + peer_));
      return;
    }
    for (uint8_t i = 0; i < nfds; ++i) {
      fds.push_back(std::move(in_fds_.front()));
      in_fds_.pop_front();
    }
    const std::span<const std::byte> payload(h + kFrameHeaderSize, len);
    in_begin_ += kFrameHeaderSize + len;
    {
      std::lock_guard lk(handler_mu_);
      if (handler_) handler_->OnFrame(type, flags, payload, fds);
    }
    if (finished_) return;
  }
  if (in_begin_ == in_end_) in_begin_ = in_end_ = 0;
  std::lock_guard lk(mu_);
  dispatching_ = false;
}

void Conn::EncodeHeader(std::byte* out, uint32_t payload_len, uint8_t type, uint8_t nfds, uint16_t flags) {
  coding::StoreLE<uint32_t>(out, payload_len);
  out[4] = static_cast<std::byte>(type);
  out[5] = static_cast<std::byte>(nfds);
  coding::StoreLE<uint16_t>(out + 6, flags);
}

Status Conn::Send(uint8_t type, uint16_t flags, std::span<const iovec> parts, std::span<const int> fds) {
  size_t total = 0;
  for (const iovec& v : parts) total += v.iov_len;
  if (total > kMaxFramePayload) return Status(Errc::kInvalidArgument, "frame too large");
  if (fds.size() > kMaxFrameFds) return Status(Errc::kInvalidArgument, "too many fds in one frame");
  std::byte header[kFrameHeaderSize];
  EncodeHeader(header, static_cast<uint32_t>(total), type, static_cast<uint8_t>(fds.size()), flags);
  iovec small[9];
  std::vector<iovec> many;
  iovec* iov = small;
  if (parts.size() + 1 > std::size(small)) {
    many.resize(parts.size() + 1);
    iov = many.data();
  }
  iov[0] = iovec{header, kFrameHeaderSize};
  std::copy(parts.begin(), parts.end(), iov + 1);
  std::lock_guard lk(mu_);
  return SendLocked(std::span<const iovec>(iov, parts.size() + 1), kFrameHeaderSize + total, fds);
}

Status Conn::SendFramed(std::span<const iovec> parts, bool borrow) {
  size_t total = 0;
  for (const iovec& v : parts) total += v.iov_len;
  std::lock_guard lk(mu_);
  return SendLocked(parts, total, {}, borrow);
}

Status Conn::SendLocked(std::span<const iovec> parts, size_t total, std::span<const int> fds, bool borrow) {
  if (closed()) return Status(FabricErrc::kPeerGone, "connection to " + peer_ + " is closed");
  size_t written = 0;
  // Inside a read burst the agent queues small frames so that they leave in one write; a large
  // one goes out at once when nothing is queued before it (saving a copy).
  constexpr size_t kDirectFromAgent = 64 * 1024;
  const bool direct = out_.empty() && (!(dispatching_ && agent_.InThread()) || total >= kDirectFromAgent);
  if (direct) {
    constexpr size_t kMaxIov = 1024;
    size_t first = 0, skip = 0;  // iovec index and offset within it where the unwritten bytes start
    alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxFrameFds)];
    std::vector<iovec> iov;
    while (written < total) {
      iov.clear();
      for (size_t i = first; i < parts.size() && iov.size() < kMaxIov; ++i) {
        const size_t off = i == first ? skip : 0;
        if (parts[i].iov_len > off) {
          iov.push_back(iovec{static_cast<std::byte*>(parts[i].iov_base) + off, parts[i].iov_len - off});
        }
      }
      msghdr msg{};
      msg.msg_iov = iov.data();
      msg.msg_iovlen = iov.size();
      if (written == 0 && !fds.empty()) AttachRights(msg, cbuf, fds.data(), fds.size());
      const ssize_t n = ::sendmsg(fd_, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        const Status s = Status::FromErrno(errno, "send to " + peer_);
        ShutdownLocked();
        return Status(FabricErrc::kPeerGone, s.ToString());
      }
      written += static_cast<size_t>(n);
      size_t left = static_cast<size_t>(n);
      while (left > 0 && first < parts.size()) {
        const size_t avail = parts[first].iov_len - skip;
        if (left >= avail) {
          left -= avail;
          ++first;
          skip = 0;
        } else {
          skip += left;
          left = 0;
        }
      }
      if (static_cast<size_t>(n) == 0) break;
    }
    if (written == total) return Status::Ok();
  }
  // Queue what was not written: copied (the caller's memory may be reused after return), except
  // large borrowable parts, which are queued by reference.
  std::vector<UniqueFd> dup_fds;
  if (written == 0) {
    for (int fd : fds) {
      UniqueFd dup(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
      if (!dup.valid()) return Status::FromErrno(errno, "dup fd for " + peer_);
      dup_fds.push_back(std::move(dup));
    }
  }
  struct Seg {
    const std::byte* p;
    size_t n;
    bool borrowed;
  };
  std::vector<Seg> segs;
  size_t skip = written;
  for (const iovec& v : parts) {
    if (skip >= v.iov_len) {
      skip -= v.iov_len;
      continue;
    }
    const size_t n = v.iov_len - skip;
    segs.push_back({static_cast<const std::byte*>(v.iov_base) + skip, n, borrow && n >= kBorrowMin});
    skip = 0;
  }
  bool first = true;
  for (size_t i = 0; i < segs.size();) {
    OutChunk c;
    if (segs[i].borrowed) {
      c.borrowed = segs[i].p;
      c.size = segs[i].n;
      ++i;
    } else {
      size_t j = i;
      while (j < segs.size() && !segs[j].borrowed) c.size += segs[j++].n;
      c.buf = std::make_unique_for_overwrite<std::byte[]>(c.size);
      for (size_t pos = 0; i < j; ++i) {
        std::memcpy(c.buf.get() + pos, segs[i].p, segs[i].n);
        pos += segs[i].n;
      }
    }
    if (first) {
      c.fds = std::move(dup_fds);
      first = false;
    }
    out_.push_back(std::move(c));
  }
  if (!(dispatching_ && agent_.InThread()) && !write_armed_) ArmWriteLocked();
  return Status::Ok();
}

bool Conn::FlushLocked() {
  while (!out_.empty()) {
    iovec iov[64];
    size_t niov = 0;
    msghdr msg{};
    alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxFrameFds)];
    OutChunk& first = out_.front();
    if (!first.fds.empty() && first.sent == 0) {
      iov[niov++] = iovec{const_cast<std::byte*>(first.data()), first.size};
      int raw[kMaxFrameFds];
      for (size_t i = 0; i < first.fds.size(); ++i) raw[i] = first.fds[i].get();
      AttachRights(msg, cbuf, raw, first.fds.size());
    } else {
      for (auto it = out_.begin(); it != out_.end() && niov < 64; ++it) {
        if (it != out_.begin() && !it->fds.empty()) break;
        iov[niov++] = iovec{const_cast<std::byte*>(it->data()) + it->sent, it->size - it->sent};
      }
    }
    msg.msg_iov = iov;
    msg.msg_iovlen = niov;
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      RDMQ_LOG(kDebug, "fabric", "send failed").kv("peer", peer_).kv("errno", errno);
      ShutdownLocked();
      return false;
    }
    size_t left = static_cast<size_t>(n);
    while (left > 0 && !out_.empty()) {
      OutChunk& c = out_.front();
      c.fds.clear();
      const size_t take = std::min(left, c.size - c.sent);
      c.sent += take;
      left -= take;
      if (c.sent == c.size) out_.pop_front();
    }
    if (!out_.empty() && out_.front().sent == 0 && !out_.front().fds.empty()) continue;
    if (n == 0) return true;
  }
  return true;
}

void Conn::ArmWriteLocked() {
  write_armed_ = true;
  auto self = shared_from_this();
  agent_.Post([self] {
    std::lock_guard lk(self->mu_);
    if (self->finished_) return;
    self->sd_.async_wait(asio::posix::stream_descriptor::wait_write,
                         [self](const boost::system::error_code& ec) {
                           if (ec) return;  // closing
                           self->OnWritable();
                         });
  });
}

void Conn::OnWritable() {
  std::lock_guard lk(mu_);
  write_armed_ = false;
  if (finished_) return;
  if (FlushLocked() && !out_.empty()) ArmWriteLocked();
}

void Conn::ShutdownLocked() noexcept {
  closed_.store(true, std::memory_order_release);
  ::shutdown(fd_, SHUT_RDWR);
}

void Conn::Close() {
  std::lock_guard lk(mu_);
  if (finished_ || closed()) return;
  ShutdownLocked();
  out_.clear();  // drops references to borrowed caller memory: nothing is sent after Close
}

void Conn::Fail(const Status& why) {
  {
    std::lock_guard lk(mu_);
    if (finished_) return;
    finished_ = true;
    closed_.store(true, std::memory_order_release);
    out_.clear();
    boost::system::error_code ec;
    sd_.cancel(ec);
    ::shutdown(fd_, SHUT_RDWR);
  }
  std::shared_ptr<ConnHandler> h;
  {
    std::lock_guard lk(handler_mu_);
    h = std::move(handler_);
    if (h) h->OnClosed(why);
  }
  in_fds_.clear();
}

// ---------------------------------------------------------------------------------- Listener

std::shared_ptr<Listener> Listener::Start(Agent& agent, UniqueFd listen_fd, AcceptFn on_accept) {
  std::shared_ptr<Listener> l(new Listener(agent, std::move(listen_fd), std::move(on_accept)));
  auto self = l;
  agent.Post([self] { self->Arm(); });
  return l;
}

Listener::Listener(Agent& agent, UniqueFd fd, AcceptFn on_accept)
    : agent_(agent), sd_(agent.io(), fd.release()), on_accept_(std::move(on_accept)) {}

Listener::~Listener() {
  boost::system::error_code ec;
  sd_.close(ec);
}

void Listener::Arm() {
  if (closed_.load()) return;
  auto self = shared_from_this();
  sd_.async_wait(asio::posix::stream_descriptor::wait_read, [self](const boost::system::error_code& ec) {
    if (ec || self->closed_.load()) return;
    for (;;) {
      UniqueFd fd(::accept4(self->sd_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!fd.valid()) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          RDMQ_LOG(kWarn, "fabric", "accept failed").kv("errno", errno);
        }
        break;
      }
      int one = 1;
      ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on Unix sockets
      std::string peer = SocketPeerName(fd.get());
      self->on_accept_(std::move(fd), std::move(peer));
      // accept4 on a blocking socket would block: take one per readiness unless more are queued.
      pollfd p{self->sd_.native_handle(), POLLIN, 0};
      if (::poll(&p, 1, 0) != 1) break;
    }
    self->Arm();
  });
}

void Listener::Close() {
  if (closed_.exchange(true)) return;
  auto self = shared_from_this();
  agent_.Post([self] {
    boost::system::error_code ec;
    self->sd_.cancel(ec);
    self->sd_.close(ec);
  });
}

// ---------------------------------------------------------------------------------- AcceptQueue

struct AcceptQueue::Pending : ConnHandler {
  AcceptQueue* queue = nullptr;
  std::shared_ptr<Conn> conn;
  std::mutex mu;
  bool have_hello = false;
  bool dead = false;
  wire::Hello hello;
  std::vector<UniqueFd> fds;

  void OnFrame(uint8_t type, uint16_t, std::span<const std::byte> payload,
               std::vector<UniqueFd>& f) override {
    bool ready = false;
    {
      std::lock_guard lk(mu);
      auto h = wire::DecodeHello(payload);
      if (type != wire::kFrameHello || have_hello || !h.ok()) {
        dead = true;
      } else {
        hello = std::move(h).value();
        fds = std::move(f);
        have_hello = ready = true;
      }
    }
    if (ready) {
      queue->Notify();
    } else {
      RDMQ_LOG(kWarn, "fabric", "closing a connection that did not start with a hello")
          .kv("peer", conn->peer());
      conn->Close();
    }
  }
  void OnClosed(const Status&) override {
    std::lock_guard lk(mu);
    dead = true;
  }
};

void AcceptQueue::OnAccept(UniqueFd fd, std::string peer) {
  auto p = std::make_shared<Pending>();
  p->queue = this;
  p->conn = Conn::Create(agent_, std::move(fd), std::move(peer));
  {
    std::lock_guard lk(mu_);
    pending_.push_back(p);
  }
  p->conn->Start(p);
}

void AcceptQueue::Notify() {
  std::lock_guard lk(mu_);
  cv_.notify_all();
}

std::optional<AcceptQueue::Incoming> AcceptQueue::Next(std::chrono::nanoseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lk(mu_);
  for (;;) {
    for (auto it = pending_.begin(); it != pending_.end();) {
      std::shared_ptr<Pending> p = *it;
      std::lock_guard plk(p->mu);
      if (p->dead) {
        it = pending_.erase(it);
      } else if (p->have_hello) {
        pending_.erase(it);
        return Incoming{p->conn, std::move(p->hello), std::move(p->fds)};
      } else {
        ++it;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    cv_.wait_until(lk, deadline);
  }
}

// ---------------------------------------------------------------------------------- sockets

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
  RDMQ_ASSIGN_OR_RETURN(addrinfo * res, Resolve(host, port, true));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, &::freeaddrinfo);
  Status last(Errc::kInvalidArgument, "no address for '" + host + "'");
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      last = Status::FromErrno(errno, "socket for " + host);
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      last = Status::FromErrno(errno, "bind " + host + ":" + std::to_string(port));
      continue;
    }
    if (::listen(fd.get(), 128) != 0) {
      last = Status::FromErrno(errno, "listen on " + host + ":" + std::to_string(port));
      continue;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
    *bound = FormatSockaddr(reinterpret_cast<sockaddr*>(&ss));
    return fd;
  }
  return last;
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
  RDMQ_ASSIGN_OR_RETURN(addrinfo * res, Resolve(host, port, false));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, &::freeaddrinfo);
  Status last(Errc::kInvalidArgument, "no address for '" + host + "'");
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      last = Status::FromErrno(errno, "socket for " + host);
      continue;
    }
    Status s =
        ConnectWithTimeout(fd.get(), ai->ai_addr, ai->ai_addrlen, timeout, host + ":" + std::to_string(port));
    if (!s.ok()) {
      last = s;
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
  }
  return last;
}

}  // namespace rdmq::fabric::internal
