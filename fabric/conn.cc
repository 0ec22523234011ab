#include "conn.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rdmq/common/log.h"

namespace rdmq::fabric::internal {

namespace asio = boost::asio;

namespace {
// Read buffer: starts at kInitialRead bytes and keeps at least kMinReadRoom free for a recvmsg.
constexpr size_t kInitialRead = size_t{256} << 10;
constexpr size_t kMinReadRoom = size_t{64} << 10;
// Fds one recvmsg may bring (several frames' worth).
constexpr size_t kMaxReadFds = kMaxFrameFds * 4;

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

std::shared_ptr<Conn> Conn::Create(Agent& agent, UniqueFd fd, std::string peer,
                                   std::unique_ptr<TlsSession> tls) {
  return std::shared_ptr<Conn>(new Conn(agent, std::move(fd), std::move(peer), std::move(tls)));
}

Conn::Conn(Agent& agent, UniqueFd fd, std::string peer, std::unique_ptr<TlsSession> tls)
    : agent_(agent),
      fd_(fd.get()),
      sd_(agent.io(), fd.release()),
      peer_(std::move(peer)),
      tls_client_(tls != nullptr && !tls->server()),
      tls_(std::move(tls)) {
  in_.resize(kInitialRead);
  if (tls_) cipher_in_.resize(kInitialRead);
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
  agent_.Post([self] {
    if (self->tls_client_) self->StartTls();
    self->ArmRead();
  });
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
  MutexLock l(mu_);
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
  if (tls_) return OnReadableTls();
  for (int round = 0; round < 64; ++round) {
    const ReadStep step = direct_left_ > 0 ? ReadDirect() : ReadBuffered();
    if (step == ReadStep::kFailed) return;
    ParseFrames();
    if (finished_ || closed() || step == ReadStep::kDrained) break;
  }
  {
    MutexLock l(mu_);
    if (!finished_ && !out_.empty() && !write_armed_) {
      if (FlushLocked() && !out_.empty()) ArmWriteLocked();
    }
  }
  // After Close() the shutdown makes the socket readable with EOF: keep reading.
  ArmRead();
}

Conn::ReadStep Conn::ReadBuffered() {
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxReadFds)];
  if (in_.size() - in_end_ < kMinReadRoom) {
    // Make room: move unconsumed bytes to the front, or grow.
    if (in_begin_ > 0) {
      std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
      in_end_ -= in_begin_;
      in_begin_ = 0;
    }
    if (in_.size() - in_end_ < kMinReadRoom) in_.resize(in_.size() * 2);
  }
  size_t room = in_.size() - in_end_;
  if (tail_reads_ > 0) {  // just after a payload received in place (conn_direct.cc)
    room = std::min(room, kDirectTail);
    --tail_reads_;
  }
  iovec iov{in_.data() + in_end_, room};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cbuf;
  msg.msg_controllen = sizeof cbuf;
  const ssize_t n = ::recvmsg(fd_, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  const int err = errno;
  if (n > 0) TakeRights(msg);
  if (n <= 0) return ReadFailed(n, err);
  in_end_ += static_cast<size_t>(n);
  return static_cast<size_t>(n) < room ? ReadStep::kDrained : ReadStep::kMore;
}

void Conn::TakeRights(msghdr& msg) {
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
}

Conn::ReadStep Conn::ReadFailed(ssize_t n, int err) {
  if (n == 0) {
    Fail(Status(FabricErrc::kPeerGone, "peer " + peer_ + " closed the connection"));
    return ReadStep::kFailed;
  }
  if (err == EINTR) return ReadStep::kMore;
  if (err == EAGAIN || err == EWOULDBLOCK) return ReadStep::kDrained;
  Fail(Status::FromErrno(err, "recvmsg from " + peer_).WithContext("connection lost"));
  return ReadStep::kFailed;
}

void Conn::ParseFrames() {
  if (in_end_ - in_begin_ < kFrameHeaderSize) return;
  {
    MutexLock l(mu_);
    dispatching_ = true;
  }
  while (in_end_ - in_begin_ >= kFrameHeaderSize) {
    const std::byte* h = in_.data() + in_begin_;
    wire::FrameHeaderImage header;
    std::memcpy(&header, h, sizeof header);
    const uint32_t len = header.length;
    const uint8_t type = header.type;
    const uint8_t nfds = header.nfds;
    const uint16_t flags = header.flags;
    if (len > kMaxFramePayload || nfds > kMaxFrameFds) {
      Fail(Status(FabricErrc::kProtocol, "frame of " + std::to_string(len) + " bytes with " +
                                             std::to_string(nfds) + " fds from " + peer_));
      return;
    }
    if (in_end_ - in_begin_ < kFrameHeaderSize + len) {
      if (tls_ == nullptr && nfds == 0 && TryBeginDirect(type, len)) break;
      if (in_.size() < kFrameHeaderSize + len + kMinReadRoom) {
        std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
        in_end_ -= in_begin_;
        in_begin_ = 0;
        in_.resize(kFrameHeaderSize + len + kMinReadRoom);
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
  MutexLock l(mu_);
  dispatching_ = false;
}

void Conn::EncodeHeader(std::byte* out, uint32_t payload_len, uint8_t type, uint8_t nfds, uint16_t flags) {
  const wire::FrameHeaderImage header{payload_len, type, nfds, flags};
  std::memcpy(out, &header, sizeof header);
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
  MutexLock l(mu_);
  return SendLocked(std::span<const iovec>(iov, parts.size() + 1), kFrameHeaderSize + total, fds);
}

Status Conn::SendFramed(std::span<const iovec> parts, bool borrow) {
  size_t total = 0;
  for (const iovec& v : parts) total += v.iov_len;
  MutexLock l(mu_);
  return SendLocked(parts, total, {}, borrow);
}

Status Conn::SendLocked(std::span<const iovec> parts, size_t total, std::span<const int> fds, bool borrow) {
  if (tls_) return SendTlsLocked(parts, total, fds);
  return SendRawLocked(parts, total, fds, borrow);
}

bool Conn::DirectLocked(size_t total) const {
  // Inside a read burst the agent queues small frames so that they leave in one write; a large
  // one goes out at once when nothing is queued before it (saving a copy).
  constexpr size_t kDirectFromAgent = size_t{64} << 10;
  return out_.empty() && (!(dispatching_ && agent_.InThread()) || total >= kDirectFromAgent);
}

Status Conn::SendRawLocked(std::span<const iovec> parts, size_t total, std::span<const int> fds,
                           bool borrow) {
  if (closed()) return Status(FabricErrc::kPeerGone, "connection to " + peer_ + " is closed");
  size_t written = 0;
  if (DirectLocked(total)) {
    Status err;
    written = WriteNowLocked(parts, total, fds, &err);
    if (!err.ok()) return err;
    if (written == total) return Status::Ok();
  }
  return QueueLocked(parts, written, fds, borrow);
}

size_t Conn::WriteNowLocked(std::span<const iovec> parts, size_t total, std::span<const int> fds,
                            Status* err) {
  constexpr size_t kMaxIov = 1024;
  size_t written = 0;
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
      *err = Status(FabricErrc::kPeerGone, s.ToString());
      return written;
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
  return written;
}

Status Conn::QueueLocked(std::span<const iovec> parts, size_t written, std::span<const int> fds,
                         bool borrow) {
  // What was not written is copied (the caller's memory may be reused after return), except large
  // borrowable parts, which are queued by reference. Fds not yet sent are duplicated.
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
  const size_t first_chunk = out_.size();
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
    out_.push_back(std::move(c));
  }
  if (out_.size() > first_chunk) out_[first_chunk].fds = std::move(dup_fds);  // with the first byte
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
    MutexLock l(self->mu_);
    if (self->finished_) return;
    self->sd_.async_wait(asio::posix::stream_descriptor::wait_write,
                         [self](const boost::system::error_code& ec) {
                           if (ec) return;  // closing
                           self->OnWritable();
                         });
  });
}

void Conn::OnWritable() {
  MutexLock l(mu_);
  write_armed_ = false;
  if (finished_) return;
  if (FlushLocked() && !out_.empty()) ArmWriteLocked();
}

void Conn::ShutdownLocked() noexcept {
  closed_.store(true, std::memory_order_release);
  ::shutdown(fd_, SHUT_RDWR);
}

void Conn::Close() {
  MutexLock l(mu_);
  if (finished_ || closed()) return;
  ShutdownLocked();
  out_.clear();  // drops references to borrowed caller memory: nothing is sent after Close
}

void Conn::Fail(const Status& why) {
  {
    MutexLock l(mu_);
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

}  // namespace rdmq::fabric::internal
