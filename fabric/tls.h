// TLS for the tcp provider's connections (docs/fabric.md, "tcp: TLS"), on OpenSSL without its
// socket I/O: a TlsSession is an SSL object over a BIO of our own whose input is ciphertext the
// connection read from its socket and whose output is ciphertext the connection then writes
// (conn.h does both). So TLS fits the connection's model unchanged: non-blocking socket, reads
// on the agent thread, sends from any thread under the connection's mutex.
//
// TlsContext holds the fabric's SSL_CTXs, built once from TlsOptions: the server side (accepted
// connections; only on a listening fabric) and the client side (dialled ones). TLS 1.2 or later,
// no renegotiation, no compression, no session tickets or resumption.
//
// Threading: TlsContext is immutable and thread-safe. A TlsSession is used under its
// connection's mutex only.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"

using SSL = struct ssl_st;
using SSL_CTX = struct ssl_ctx_st;

namespace rdmq::fabric::internal {

// Ciphertext a session produced and the connection has not taken yet: one growing buffer whose
// storage the connection may take over (when the socket cannot take it all at once).
struct CipherOut {
  std::unique_ptr<std::byte[]> buf;
  size_t size = 0, capacity = 0;
  void Append(const void* p, size_t n);
  // Room for `n` more bytes (so that a large write does not grow the buffer record by record).
  void Reserve(size_t n);
  // The buffer, handed over; this one starts empty again.
  std::unique_ptr<std::byte[]> Release() {
    size = capacity = 0;
    return std::move(buf);
  }
};

class TlsSession {
 public:
  TlsSession(SSL* ssl, bool server);  // takes ownership of `ssl`
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  bool server() const noexcept { return server_; }
  // The handshake finished: application data may be written and read.
  bool established() const noexcept { return established_; }

  // The ciphertext SSL may read next (until the matching TakeInput): bytes that came from the
  // socket. TakeInput returns how many of them SSL consumed and forgets the span.
  void SetInput(std::span<const std::byte> in) noexcept {
    in_ = in;
    consumed_ = 0;
  }
  size_t TakeInput() noexcept {
    in_ = {};
    return consumed_;
  }

  // Drives the handshake as far as the input allows: OK when it finished or waits for more
  // input (established() tells which); kTls naming why when it failed (a certificate that is
  // not trusted or does not name the host, a missing client certificate, not TLS at all, ...).
  Status Handshake();
  // Encrypts `data` into the output (established only). kTls on failure.
  Status Write(std::span<const std::byte> data);
  // Decrypts into `dst` (up to `room` bytes, at least one record's worth): the bytes written,
  // 0 when more input is needed. kPeerGone when the peer closed the TLS session, kTls on a bad
  // record or an alert.
  Result<size_t> Read(std::byte* dst, size_t room);
  // "TLSv1.3 TLS_AES_256_GCM_SHA384": the protocol version and cipher agreed (for logs).
  std::string Describe() const;
  // Once established: the CN of the peer's certificate if it sent one and it was verified, else "".
  std::string PeerCommonName() const;
  // Ciphertext to send: handshake messages, alerts, records of Write (and of Read: TLS 1.3 key
  // updates).
  CipherOut& out() noexcept { return out_; }

 private:
  friend struct TlsBio;
  Status Failed(int ret, const char* what);

  SSL* const ssl_;
  const bool server_;
  bool established_ = false;
  std::span<const std::byte> in_;
  size_t consumed_ = 0;
  CipherOut out_;
};

class TlsContext {
 public:
  // The contexts for `o` (o.enabled): the client side always, the server side when `listening`
  // (which then needs o.certificate and o.key). kInvalidArgument naming the file and OpenSSL's
  // reason when a file cannot be used or the key does not match the certificate.
  static Result<std::shared_ptr<const TlsContext>> Create(const TlsOptions& o, bool listening);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A session for an accepted connection.
  Result<std::unique_ptr<TlsSession>> NewServer() const;
  // A session for a connection dialled to `host` (a DNS name or an IP address), which the
  // server's certificate must name unless TlsOptions say otherwise.
  Result<std::unique_ptr<TlsSession>> NewClient(const std::string& host) const;

 private:
  TlsContext() = default;
  SSL_CTX* server_ = nullptr;
  SSL_CTX* client_ = nullptr;
  bool verify_peer_ = true;
  bool verify_name_ = true;
  std::string server_name_;
};

}  // namespace rdmq::fabric::internal
