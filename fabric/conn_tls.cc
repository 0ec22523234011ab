// Conn's TLS paths (conn.h, tls.h): ciphertext read on the agent thread and decrypted into the
// frame buffer; frames encrypted under mu_ and written as the plaintext path writes its bytes.
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "conn.h"
#include "rdmq/common/log.h"

namespace rdmq::fabric::internal {

namespace {
// Read buffers keep this much room: one TLS record's plaintext fits (16 KiB), and a recv takes a
// good bite of the socket's queue.
constexpr size_t kTlsReadRoom = size_t{64} << 10;
// Parts of a frame shorter than this are gathered with their neighbours into one run of records
// rather than written as records of their own.
constexpr size_t kGatherBelow = size_t{4} << 10;
constexpr size_t kFromAgentDirect = size_t{64} << 10;  // as DirectLocked's

// Room for at least `room` bytes after `end` in `buf`, moving [begin, end) to the front first.
void MakeRoom(std::vector<std::byte>& buf, size_t& begin, size_t& end, size_t room) {
  if (buf.size() - end >= room) return;
  if (begin > 0) {
    std::memmove(buf.data(), buf.data() + begin, end - begin);
    end -= begin;
    begin = 0;
  }
  if (buf.size() - end < room) buf.resize(std::max(buf.size() * 2, end + room));
}
}  // namespace

std::string Conn::peer_identity() {
  MutexLock l(mu_);
  return peer_identity_;
}

void Conn::StartTls() {
  Status s;
  {
    MutexLock l(mu_);
    if (finished_) return;
    s = PumpTlsLocked();  // the ClientHello
  }
  if (!s.ok()) FailTls(s);
}

Status Conn::PumpTlsLocked() {
  Status s;
  if (!tls_->established()) {
    s = tls_->Handshake();
    if (s.ok() && tls_->established()) {
      peer_identity_ = tls_->PeerCommonName();
      RDMQ_LOG(kDebug, "fabric", "TLS established")
          .kv("peer", peer_)
          .kv("client", tls_client_)
          .kv("tls", tls_->Describe())
          .kv("peer_cn", peer_identity_);
      s = EncryptPlainLocked();  // the frames that waited for it
    }
  }
  while (s.ok() && tls_->established()) {
    MakeRoom(in_, in_begin_, in_end_, kTlsReadRoom);
    auto n = tls_->Read(in_.data() + in_end_, in_.size() - in_end_);
    if (!n.ok()) {
      s = n.status();
    } else if (*n == 0) {
      break;
    } else {
      in_end_ += *n;
    }
  }
  // Handshake flights, alerts (also the one telling the peer why we fail), key updates.
  const Status w = WriteCipherLocked();
  return s.ok() ? w : s;
}

void Conn::OnReadableTls() {
  for (int round = 0; round < 64; ++round) {
    MakeRoom(cipher_in_, cipher_begin_, cipher_end_, kTlsReadRoom);
    const size_t room = cipher_in_.size() - cipher_end_;
    const ssize_t n = ::recv(fd_, cipher_in_.data() + cipher_end_, room, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      Fail(Status::FromErrno(errno, "recv from " + peer_).WithContext("connection lost"));
      return;
    }
    cipher_end_ += static_cast<size_t>(n);
    Status s;
    bool established = false;
    {
      MutexLock l(mu_);
      if (finished_) return;
      tls_->SetInput(std::span(cipher_in_.data() + cipher_begin_, cipher_end_ - cipher_begin_));
      s = PumpTlsLocked();
      cipher_begin_ += tls_->TakeInput();
      if (cipher_begin_ == cipher_end_) cipher_begin_ = cipher_end_ = 0;
      established = tls_->established();
    }
    if (!s.ok()) {
      if (s.is(FabricErrc::kPeerGone)) {
        Fail(s);
      } else {
        FailTls(s);
      }
      return;
    }
    ParseFrames();
    if (finished_) return;
    if (n == 0) {
      Fail(established ? Status(FabricErrc::kPeerGone, "peer " + peer_ + " closed the connection")
                       : Status(FabricErrc::kTls, "peer " + peer_ +
                                                      " closed the connection during the TLS handshake "
                                                      "(does it speak TLS?)"));
      return;
    }
    if (closed()) break;
    if (static_cast<size_t>(n) < room) break;  // drained the socket
  }
  {
    MutexLock l(mu_);
    if (!finished_) {
      // The burst's answers, encrypted together, then whatever is queued.
      Status s = EncryptPlainLocked();
      if (s.ok()) s = WriteCipherLocked();
      if (s.ok() && !out_.empty() && !write_armed_ && FlushLocked() && !out_.empty()) ArmWriteLocked();
    }
  }
  ArmRead();
}

Status Conn::SendTlsLocked(std::span<const iovec> parts, size_t total, std::span<const int> fds) {
  if (closed()) return Status(FabricErrc::kPeerGone, "connection to " + peer_ + " is closed");
  if (!fds.empty()) return Status(Errc::kInvalidArgument, "file descriptors cannot travel over TLS");
  // Held as plaintext: everything before the handshake finished, and small frames the agent
  // sends inside a read burst (encrypted together when the burst ends).
  const bool hold = !tls_->established() || (dispatching_ && agent_.InThread() && total < kFromAgentDirect);
  for (const iovec& v : parts) {
    const auto* p = static_cast<const std::byte*>(v.iov_base);
    if (hold || v.iov_len < kGatherBelow) {
      tls_plain_.insert(tls_plain_.end(), p, p + v.iov_len);
      continue;
    }
    RDMQ_RETURN_IF_ERROR(EncryptPlainLocked());
    if (Status s = tls_->Write(std::span(p, v.iov_len)); !s.ok()) {
      ShutdownLocked();
      return s;
    }
  }
  if (hold) return Status::Ok();
  RDMQ_RETURN_IF_ERROR(EncryptPlainLocked());
  return WriteCipherLocked();
}

Status Conn::EncryptPlainLocked() {
  if (tls_plain_.empty() || !tls_->established()) return Status::Ok();
  Status s = tls_->Write(tls_plain_);
  tls_plain_.clear();
  if (tls_plain_.capacity() > (size_t{1} << 20)) tls_plain_.shrink_to_fit();  // after a large early frame
  if (!s.ok()) ShutdownLocked();
  return s;
}

Status Conn::WriteCipherLocked() {
  CipherOut& c = tls_->out();
  if (c.size == 0) return Status::Ok();
  if (closed()) {
    c.size = 0;
    return Status(FabricErrc::kPeerGone, "connection to " + peer_ + " is closed");
  }
  size_t written = 0;
  if (DirectLocked(c.size)) {
    const iovec v{c.buf.get(), c.size};
    Status err;
    written = WriteNowLocked(std::span(&v, 1), c.size, {}, &err);
    if (!err.ok()) {
      c.size = 0;
      return err;
    }
    if (written == c.size) {
      c.size = 0;
      return Status::Ok();
    }
  }
  // The rest is queued without a copy: the chunk takes the buffer over.
  OutChunk chunk;
  chunk.size = c.size;
  chunk.sent = written;
  chunk.buf = c.Release();
  out_.push_back(std::move(chunk));
  if (!(dispatching_ && agent_.InThread()) && !write_armed_) ArmWriteLocked();
  return Status::Ok();
}

void Conn::FailTls(const Status& why) {
  // The server logs who was refused and why; a client reports it to its caller.
  if (tls_client_) {
    RDMQ_LOG(kDebug, "fabric", "TLS failed; closing the connection").kv("peer", peer_).kv("why", why);
  } else {
    RDMQ_LOG(kWarn, "fabric", "TLS failed; closing the connection").kv("peer", peer_).kv("why", why);
  }
  Fail(why);
}

}  // namespace rdmq::fabric::internal
