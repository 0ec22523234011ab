// In-place receipt of large frame payloads (conn.h): the handler names the destination, the
// socket's bytes go straight there, and nothing but the frame's head passes through the buffer.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "conn.h"

namespace rdmq::fabric::internal {

namespace {
// Where the bytes of a payload the handler drops go, a read at a time.
constexpr size_t kDrainSize = size_t{64} << 10;
}  // namespace

bool Conn::TryBeginDirect(uint8_t type, uint32_t len) {
  const size_t avail = in_end_ - in_begin_ - kFrameHeaderSize;  // payload bytes buffered
  const std::byte* payload = in_.data() + in_begin_ + kFrameHeaderSize;
  std::lock_guard lk(handler_mu_);
  if (!handler_) return false;
  const size_t head = handler_->DirectHead(type);
  if (head == 0 || len < head + kDirectMin || avail < head) return false;
  if (!handler_->BeginDirect(type, std::span(payload, head), len - head)) return false;
  // What of the payload is buffered already is copied (in one call: the copy places all of it);
  // the rest is read in place.
  if (avail > head) {
    auto copy = [&](std::byte* dst, size_t n) -> ssize_t {
      const size_t take = std::min(n, avail - head);
      if (dst != nullptr) std::memcpy(dst, payload + head, take);
      return static_cast<ssize_t>(take);
    };
    (void)handler_->ReceiveDirect(len - head, DirectFill(copy));
  }
  direct_left_ = len - avail;
  in_begin_ = in_end_ = 0;  // everything buffered belonged to this frame
  return true;
}

Conn::ReadStep Conn::ReadDirect() {
  // in_ is empty while a payload is received in place: the tail lands at its start.
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxFrameFds)];
  size_t placed = 0, tail = 0, asked = 0;
  ssize_t got = 0;
  int err = 0;
  bool called = false;
  auto receive = [&](std::byte* dst, size_t n) -> ssize_t {
    called = true;
    if (dst == nullptr) {
      if (!drain_) drain_ = std::make_unique_for_overwrite<std::byte[]>(kDrainSize);
      dst = drain_.get();
      n = std::min(n, kDrainSize);
    }
    n = std::min(n, direct_left_);
    iovec iov[2] = {{dst, n}, {in_.data() + in_end_, kDirectTail}};
    msghdr msg{};
    msg.msg_iov = iov;
    // Past the payload only once the destination takes all of what is left of it.
    msg.msg_iovlen = n == direct_left_ ? 2 : 1;
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof cbuf;
    asked = n + (msg.msg_iovlen == 2 ? kDirectTail : 0);
    got = ::recvmsg(fd_, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    err = errno;
    if (got <= 0) return -1;
    TakeRights(msg);
    placed = std::min(static_cast<size_t>(got), n);
    tail = static_cast<size_t>(got) - placed;
    return static_cast<ssize_t>(placed);
  };
  const DirectFill fill(receive);
  {
    std::lock_guard lk(handler_mu_);
    if (handler_) {
      (void)handler_->ReceiveDirect(direct_left_, fill);
    }
    if (!called) (void)fill(nullptr, direct_left_);
  }
  if (got <= 0) return ReadFailed(got, err);
  direct_left_ -= placed;
  in_end_ += tail;
  if (direct_left_ == 0) {
    tail_reads_ = kDirectTailReads;
    std::lock_guard lk(handler_mu_);
    if (handler_) handler_->EndDirect();
  }
  return static_cast<size_t>(got) < asked ? ReadStep::kDrained : ReadStep::kMore;
}

}  // namespace rdmq::fabric::internal
