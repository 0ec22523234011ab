// Framed message connections over stream sockets (Unix or TCP), served by the fabric's agent
// (agent.h), with optional file descriptor passing (SCM_RIGHTS): the bootstrap stream of every
// provider.
//
// Frame = 8-byte header {u32 payload length, u8 type, u8 number of fds, u16 flags} (little-
// endian, wire::FrameHeaderImage) + payload. Fds ride on the sendmsg that carries the frame's
// first byte.
//
// Threading: Conn methods are thread-safe unless noted. Handlers run on the agent thread.
// Conn::Send from the agent thread (inside a handler) only queues; the queue is flushed when the
// handler returns, so that a burst of responses goes out in one write.
//
// In-place receipt (conn_direct.cc, plaintext connections only): a handler may take the payload
// of a large frame straight into its destination (the tcp provider: a WRITE's bytes into the
// target region, a READ's data into the initiator's buffer) instead of having it buffered and
// copied. The frame's head is parsed first; then each read goes into the destination and at most
// kDirectTail bytes past it, so that the frames after it are not read into the buffer whole.
//
// TLS (tcp only, tls.h; conn_tls.cc): a connection created with a TlsSession sends and receives
// the same frames inside TLS records. Frames sent before the handshake finished wait for it (as
// plaintext, under mu_); no frame is delivered before it finished. Sends encrypt under mu_ and
// write the ciphertext as above (never by reference: `borrow` does not apply); the agent
// decrypts what it reads under mu_ before parsing frames. A connection without a session takes
// none of these paths.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "agent.h"
#include "posix.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"
#include "tls.h"
#include "wire.h"

namespace rdmq::fabric::internal {

inline constexpr size_t kFrameHeaderSize = wire::kFrameHeaderSize;
// Largest payload accepted from a peer (a 64 MiB WRITE plus its header).
inline constexpr size_t kMaxFramePayload = (size_t{64} << 20) + 4096;
// Largest number of fds one frame may carry.
inline constexpr size_t kMaxFrameFds = 8;

// ReceiveDirect's way of placing bytes: fill(dst, n) receives at most the payload's next `n`
// bytes at `dst` (nullptr: they are dropped) and returns how many it placed there, or -1 when
// the connection failed. A reference to the connection's callable, valid for the call it is
// passed to (no allocation per read, as a std::function holding its captures could make).
class DirectFill {
 public:
  template <class F>
  explicit DirectFill(F& f) noexcept
      : obj_(&f), call_([](void* o, std::byte* dst, size_t n) { return (*static_cast<F*>(o))(dst, n); }) {}
  ssize_t operator()(std::byte* dst, size_t n) const { return call_(obj_, dst, n); }

 private:
  void* obj_;
  ssize_t (*call_)(void*, std::byte*, size_t);
};

class ConnHandler {
 public:
  virtual ~ConnHandler() = default;
  // A complete frame. `fds` are the descriptors that came with it (owned by the handler now).
  virtual void OnFrame(uint8_t type, uint16_t flags, std::span<const std::byte> payload,
                       std::vector<UniqueFd>& fds) = 0;
  // The connection ended (EOF, error, protocol violation or Close). Called once, last.
  virtual void OnClosed(const Status& why) = 0;

  // ---- in-place receipt (optional)
  // How many payload bytes of a frame of `type` the handler needs to see to place the rest (0:
  // it never takes frames of that type in place).
  virtual size_t DirectHead(uint8_t /*type*/) { return 0; }
  // A frame of `type` without fds, of which the first `head` payload bytes arrived and `rest`
  // more (at least Conn::kDirectMin) are coming: true to take them in place (ReceiveDirect until
  // they are all placed, then EndDirect; OnFrame is not called for this frame), false to have
  // the frame buffered and delivered to OnFrame as usual.
  virtual bool BeginDirect(uint8_t /*type*/, std::span<const std::byte> /*head*/, size_t /*rest*/) {
    return false;
  }
  // Places the next of the `left` bytes still to come: calls `fill` exactly once, with where they
  // go (nullptr drops them) and `left`, while what owns that memory is held; returns what it
  // returned.
  virtual ssize_t ReceiveDirect(size_t left, const DirectFill& fill) { return fill(nullptr, left); }
  // Every byte of the frame taken in place arrived.
  virtual void EndDirect() {}
};

class Conn : public std::enable_shared_from_this<Conn> {
 public:
  // Takes ownership of a connected stream socket; with `tls`, everything on it is inside TLS
  // (the session's side, client or server, says who starts the handshake).
  static std::shared_ptr<Conn> Create(Agent& agent, UniqueFd fd, std::string peer,
                                      std::unique_ptr<TlsSession> tls = nullptr);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Installs the handler and starts reading. Call once.
  void Start(std::shared_ptr<ConnHandler> handler);
  // Replaces the handler (e.g. when an accepted connection becomes an endpoint).
  void SetHandler(std::shared_ptr<ConnHandler> handler);
  // After return no callback is running or will run (safe to call from inside a callback).
  // The caller must not hold a lock that a callback takes.
  void ClearHandler();

  // Sends one frame made of `parts` (gathered), with `fds` (duplicated if they must wait).
  // kPeerGone when the connection is closed; kInvalidArgument for fds on a TLS connection.
  Status Send(uint8_t type, uint16_t flags, std::span<const iovec> parts, std::span<const int> fds = {})
      EXCLUDES(mu_);
  Status Send(uint8_t type, uint16_t flags, std::span<const std::byte> payload) EXCLUDES(mu_) {
    iovec v{const_cast<std::byte*>(payload.data()), payload.size()};
    return Send(type, flags, std::span<const iovec>(&v, 1));
  }
  // Sends bytes that already are complete frames (several of them: one write for a batch).
  // With `borrow`, parts of at least kBorrowMin bytes that cannot be written at once are queued
  // by reference, not copied: the caller keeps them valid and unchanged until the connection
  // is closed or the peer has answered for them (the verbs rule for a posted WRITE's buffer).
  Status SendFramed(std::span<const iovec> parts, bool borrow = false) EXCLUDES(mu_);
  static constexpr size_t kBorrowMin = size_t{16} << 10;
  // Payloads of at least this many bytes past their head may be received in place.
  static constexpr size_t kDirectMin = size_t{16} << 10;
  // Bytes read past a payload received in place (a tcp request's frame and header), and how many
  // reads after one are capped at that, so that a following large frame is not read whole into
  // the buffer before its head was seen.
  static constexpr size_t kDirectTail = 64;
  static constexpr int kDirectTailReads = 4;
  // Encodes a frame header into `out` (kFrameHeaderSize bytes).
  static void EncodeHeader(std::byte* out, uint32_t payload_len, uint8_t type, uint8_t nfds, uint16_t flags);
  // Shuts the socket down; the agent then closes it and calls OnClosed. Idempotent.
  void Close() EXCLUDES(mu_);
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  const std::string& peer() const noexcept { return peer_; }
  int fd() const noexcept { return fd_; }
  bool tls() const noexcept { return tls_ != nullptr; }
  // TLS: the CN of the peer's verified certificate, once the handshake finished ("" before,
  // without TLS, or without one).
  std::string peer_identity() EXCLUDES(mu_);

 private:
  struct OutChunk {
    std::unique_ptr<std::byte[]> buf;     // not zero-filled: it is overwritten at once
    const std::byte* borrowed = nullptr;  // the caller's memory, when not copied
    size_t size = 0;
    const std::byte* data() const noexcept { return borrowed ? borrowed : buf.get(); }
    size_t sent = 0;
    std::vector<UniqueFd> fds;  // sent with the first byte
  };
  Conn(Agent& agent, UniqueFd fd, std::string peer, std::unique_ptr<TlsSession> tls);
  void ArmRead() EXCLUDES(mu_);
  void OnReadable() EXCLUDES(mu_);
  // One recvmsg of OnReadable (plaintext): into the buffer, or into the destination of a payload
  // taken in place (conn_direct.cc).
  enum class ReadStep { kMore, kDrained, kFailed };
  ReadStep ReadBuffered() EXCLUDES(mu_);
  ReadStep ReadDirect() EXCLUDES(mu_);
  // Moves the fds a recvmsg brought to in_fds_.
  void TakeRights(msghdr& msg);
  // Fails the connection after recvmsg returned `n` (< 0 with errno `err`, or 0 at EOF); kMore
  // for EINTR, kDrained for EAGAIN.
  ReadStep ReadFailed(ssize_t n, int err) EXCLUDES(mu_);
  // In ParseFrames, for the incomplete frame at in_begin_ (payload `len`, no fds): offers it to
  // the handler for in-place receipt and places what is buffered of it; true if taken.
  bool TryBeginDirect(uint8_t type, uint32_t len);
  void ArmWriteLocked() REQUIRES(mu_);
  void OnWritable() EXCLUDES(mu_);
  // Writes queued chunks until the socket would block. Returns false on a socket error (then the
  // connection is being shut down).
  bool FlushLocked() REQUIRES(mu_);
  void ParseFrames() EXCLUDES(mu_);
  void Fail(const Status& why) EXCLUDES(mu_);
  void ShutdownLocked() noexcept REQUIRES(mu_);
  Status SendLocked(std::span<const iovec> parts, size_t total, std::span<const int> fds, bool borrow = false)
      REQUIRES(mu_);
  // The socket side of SendLocked: writes at once what the socket takes (when nothing is queued
  // and this is not a burst from the agent), queues the rest.
  Status SendRawLocked(std::span<const iovec> parts, size_t total, std::span<const int> fds, bool borrow)
      REQUIRES(mu_);
  // Whether SendRawLocked may write `total` bytes at once rather than queue them.
  bool DirectLocked(size_t total) const REQUIRES(mu_);
  // Writes `parts` until the socket would block: the bytes written. On a socket error `*err` is
  // set and the connection is being shut down.
  size_t WriteNowLocked(std::span<const iovec> parts, size_t total, std::span<const int> fds, Status* err)
      REQUIRES(mu_);
  // Queues what SendLocked could not write (from byte `written` of `parts` on).
  Status QueueLocked(std::span<const iovec> parts, size_t written, std::span<const int> fds, bool borrow)
      REQUIRES(mu_);

  // ---- TLS (conn_tls.cc), only with tls_
  // The client's first handshake flight. Agent thread.
  void StartTls() EXCLUDES(mu_);
  void OnReadableTls() EXCLUDES(mu_);
  // Drives the session over the ciphertext it was given: the handshake, then records decrypted
  // into in_; writes what it produced. kTls (or kPeerGone) when the connection must end.
  Status PumpTlsLocked() REQUIRES(mu_);
  Status SendTlsLocked(std::span<const iovec> parts, size_t total, std::span<const int> fds) REQUIRES(mu_);
  // Encrypts the plaintext waiting in tls_plain_ (once established).
  Status EncryptPlainLocked() REQUIRES(mu_);
  // Hands the session's ciphertext to the socket (SendRawLocked's rules, without a copy).
  Status WriteCipherLocked() REQUIRES(mu_);
  // Ends the connection after a TLS failure: logs it, sends what the session produced (its
  // alert) and fails.
  void FailTls(const Status& why) EXCLUDES(mu_);

  Agent& agent_;
  const int fd_;  // owned by sd_
  boost::asio::posix::stream_descriptor sd_;
  std::string peer_;

  Mutex mu_;  // the out queue and the socket's life
  std::deque<OutChunk> out_ GUARDED_BY(mu_);
  bool write_armed_ GUARDED_BY(mu_) = false;
  bool dispatching_ GUARDED_BY(mu_) = false;  // the agent is inside a read burst: sends from it just queue
  std::atomic<bool> closed_{false};
  // The descriptor was closed and OnClosed delivered. Set by the agent under mu_; the agent reads
  // it without.
  bool finished_ = false;

  // TLS: the session (its state guarded by mu_), and frames waiting as plaintext for the
  // handshake or for the end of the agent's burst (then encrypted as one run of records).
  const bool tls_client_;  // with a session: it starts the handshake (set before tls_ is)
  const std::unique_ptr<TlsSession> tls_ PT_GUARDED_BY(mu_);
  std::vector<std::byte> tls_plain_ GUARDED_BY(mu_);
  std::string peer_identity_ GUARDED_BY(mu_);

  std::recursive_mutex handler_mu_;  // recursive: a handler may ClearHandler from its callback
  std::shared_ptr<ConnHandler> handler_;

  // Agent-thread read state (with TLS: the plaintext, written by PumpTlsLocked).
  std::vector<std::byte> in_;
  size_t in_begin_ = 0, in_end_ = 0;
  std::deque<UniqueFd> in_fds_;
  // In-place receipt: payload bytes of the current frame still to come; reads left capped at
  // kDirectTail; where dropped bytes go.
  size_t direct_left_ = 0;
  int tail_reads_ = 0;
  std::unique_ptr<std::byte[]> drain_;
  // TLS: ciphertext read from the socket and not yet consumed by the session.
  std::vector<std::byte> cipher_in_;
  size_t cipher_begin_ = 0, cipher_end_ = 0;
};

}  // namespace rdmq::fabric::internal
