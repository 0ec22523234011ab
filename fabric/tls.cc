#include "tls.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace rdmq::fabric::internal {

// ------------------------------------------------------------------------------ CipherOut

void CipherOut::Reserve(size_t n) {
  if (capacity - size >= n) return;
  const size_t want = std::max(size + n, capacity * 2);
  auto bigger = std::make_unique_for_overwrite<std::byte[]>(want);
  if (size > 0) std::memcpy(bigger.get(), buf.get(), size);
  buf = std::move(bigger);
  capacity = want;
}

void CipherOut::Append(const void* p, size_t n) {
  Reserve(n);
  std::memcpy(buf.get() + size, p, n);
  size += n;
}

// ------------------------------------------------------------------------------ the BIO

// The BIO under every session: reads come from the session's input span (the connection's
// ciphertext buffer), writes go to its CipherOut. Nothing here blocks or touches a socket.
struct TlsBio {
  static int Write(BIO* b, const char* data, int len) {
    auto* s = static_cast<TlsSession*>(BIO_get_data(b));
    BIO_clear_retry_flags(b);
    if (len <= 0) return 0;
    s->out_.Append(data, static_cast<size_t>(len));
    return len;
  }
  static int Read(BIO* b, char* dst, int len) {
    auto* s = static_cast<TlsSession*>(BIO_get_data(b));
    BIO_clear_retry_flags(b);
    if (len <= 0) return 0;
    if (s->in_.empty()) {
      BIO_set_retry_read(b);  // not the end of the stream: the connection brings more
      return -1;
    }
    const size_t n = std::min(s->in_.size(), static_cast<size_t>(len));
    std::memcpy(dst, s->in_.data(), n);
    s->in_ = s->in_.subspan(n);
    s->consumed_ += n;
    return static_cast<int>(n);
  }
  static long Ctrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }
  static int Create(BIO* b) {
    BIO_set_init(b, 1);
    return 1;
  }
  static BIO_METHOD* Method() {
    static BIO_METHOD* const m = [] {
      BIO_METHOD* meth = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "rdmq-conn");
      BIO_meth_set_write(meth, Write);
      BIO_meth_set_read(meth, Read);
      BIO_meth_set_ctrl(meth, Ctrl);
      BIO_meth_set_create(meth, Create);
      return meth;
    }();
    return m;
  }
};

namespace {

// OpenSSL's reasons queued on this thread, "; "-separated (and the queue cleared).
std::string DrainErrors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    std::string r = reason != nullptr ? reason : "error " + std::to_string(ERR_GET_REASON(e));
    if (out.find(r) != std::string::npos) continue;
    out += (out.empty() ? "" : "; ") + r;
  }
  return out.empty() ? "unknown error" : out;
}

Status FileError(const char* what, const std::string& file) {
  return Status(Errc::kInvalidArgument, std::string(what) + " " + file + ": " + DrainErrors());
}

// The settings both sides share: TLS 1.2 or later, no renegotiation or compression, no session
// cache (every connection makes a full handshake; connections are long-lived).
SSL_CTX* NewContext(const SSL_METHOD* method) {
  SSL_CTX* ctx = SSL_CTX_new(method);
  if (ctx == nullptr) return nullptr;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  return ctx;
}

// A certificate chain and its key, checked against each other.
Status UseIdentity(SSL_CTX* ctx, const TlsOptions& o) {
  if (SSL_CTX_use_certificate_chain_file(ctx, o.certificate.c_str()) != 1) {
    return FileError("TLS certificate chain", o.certificate);
  }
  const bool loaded = SSL_CTX_use_PrivateKey_file(ctx, o.key.c_str(), SSL_FILETYPE_PEM) == 1;
  // (OpenSSL checks the key against the certificate as it loads it.)
  if (!loaded && ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
    return FileError("TLS private key", o.key);
  }
  if (!loaded || SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    return Status(Errc::kInvalidArgument,
                  "TLS private key " + o.key + " does not match the certificate in " + o.certificate);
  }
  return Status::Ok();
}

bool IsIpAddress(const std::string& host) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

// ------------------------------------------------------------------------------ TlsSession

TlsSession::TlsSession(SSL* ssl, bool server) : ssl_(ssl), server_(server) {
  BIO* bio = BIO_new(TlsBio::Method());
  BIO_set_data(bio, this);
  SSL_set_bio(ssl_, bio, bio);  // one BIO both ways: SSL takes the one reference
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

Status TlsSession::Failed(int ret, const char* what) {
  const int err = SSL_get_error(ssl_, ret);
  std::string why = err == SSL_ERROR_SSL ? DrainErrors() : "SSL error " + std::to_string(err);
  ERR_clear_error();
  const long verify = SSL_get_verify_result(ssl_);
  if (verify != X509_V_OK) why += " (" + std::string(X509_verify_cert_error_string(verify)) + ")";
  return Status(FabricErrc::kTls, std::string(what) + ": " + why);
}

std::string TlsSession::Describe() const {
  return std::string(SSL_get_version(ssl_)) + " " + SSL_CIPHER_get_name(SSL_get_current_cipher(ssl_));
}

std::string TlsSession::PeerCommonName() const {
  if (SSL_get_verify_result(ssl_) != X509_V_OK) return {};
  X509* cert = SSL_get0_peer_certificate(ssl_);
  if (cert == nullptr) return {};
  // (Only a verified certificate counts: without SSL_VERIFY_PEER the result stays X509_V_OK.)
  if ((SSL_get_verify_mode(ssl_) & SSL_VERIFY_PEER) == 0) return {};
  X509_NAME* subject = X509_get_subject_name(cert);
  const int at = subject != nullptr ? X509_NAME_get_index_by_NID(subject, NID_commonName, -1) : -1;
  if (at < 0) return {};
  unsigned char* utf8 = nullptr;
  const int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at)));
  std::string cn;
  if (n > 0) cn.assign(reinterpret_cast<const char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return cn;
}

Status TlsSession::Handshake() {
  if (established_) return Status::Ok();
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    established_ = true;
    return Status::Ok();
  }
  if (SSL_get_error(ssl_, r) == SSL_ERROR_WANT_READ) return Status::Ok();
  return Failed(r, "TLS handshake");
}

Status TlsSession::Write(std::span<const std::byte> data) {
  while (!data.empty()) {
    const int n = static_cast<int>(std::min<size_t>(data.size(), INT_MAX / 2));
    // Room for the records' headers and tags too (at most 16 KiB of data per record).
    out_.Reserve(static_cast<size_t>(n) + (static_cast<size_t>(n) / 16384 + 1) * 64);
    ERR_clear_error();
    const int w = SSL_write(ssl_, data.data(), n);
    if (w <= 0) return Failed(w, "TLS write");
    data = data.subspan(static_cast<size_t>(w));
  }
  return Status::Ok();
}

Result<size_t> TlsSession::Read(std::byte* dst, size_t room) {
  ERR_clear_error();
  const int r = SSL_read(ssl_, dst, static_cast<int>(std::min<size_t>(room, INT_MAX)));
  if (r > 0) return static_cast<size_t>(r);
  switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_WANT_READ:
      return size_t{0};
    case SSL_ERROR_ZERO_RETURN:
      return Status(FabricErrc::kPeerGone, "the peer closed the TLS session");
    default:
      return Failed(r, "TLS");
  }
}

// ------------------------------------------------------------------------------ TlsContext

TlsContext::~TlsContext() {
  SSL_CTX_free(server_);
  SSL_CTX_free(client_);
}

Result<std::shared_ptr<const TlsContext>> TlsContext::Create(const TlsOptions& o, bool listening) {
  std::shared_ptr<TlsContext> t(new TlsContext());
  t->verify_peer_ = o.verify_peer;
  t->verify_name_ = o.verify_name;
  t->server_name_ = o.server_name;
  ERR_clear_error();
  if (o.certificate.empty() != o.key.empty()) {
    return Status(Errc::kInvalidArgument, "TLS needs both a certificate chain and its key, or neither");
  }
  const bool client_auth = o.client_auth != TlsOptions::ClientAuth::kNone;
  if (listening) {
    if (o.certificate.empty()) {
      return Status(Errc::kInvalidArgument, "a listening fabric with TLS needs a certificate chain and key");
    }
    if (client_auth && o.ca.empty()) {
      return Status(Errc::kInvalidArgument, "asking for client certificates needs a CA file to check them");
    }
    t->server_ = NewContext(TLS_server_method());
    if (t->server_ == nullptr) return Status(Errc::kInternal, "SSL_CTX_new: " + DrainErrors());
    RDMQ_RETURN_IF_ERROR(UseIdentity(t->server_, o));
    SSL_CTX_set_num_tickets(t->server_, 0);
    if (client_auth) {
      if (SSL_CTX_load_verify_locations(t->server_, o.ca.c_str(), nullptr) != 1) {
        return FileError("TLS CA file", o.ca);
      }
      // Tell clients which CAs their certificate should come from.
      STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.ca.c_str());
      if (names != nullptr) SSL_CTX_set_client_CA_list(t->server_, names);
      ERR_clear_error();
      SSL_CTX_set_verify(t->server_,
                         o.client_auth == TlsOptions::ClientAuth::kRequired
                             ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                             : SSL_VERIFY_PEER,
                         nullptr);
    }
  }
  t->client_ = NewContext(TLS_client_method());
  if (t->client_ == nullptr) return Status(Errc::kInternal, "SSL_CTX_new: " + DrainErrors());
  if (!o.certificate.empty()) RDMQ_RETURN_IF_ERROR(UseIdentity(t->client_, o));
  if (o.verify_peer) {
    if (!o.ca.empty()) {
      if (SSL_CTX_load_verify_locations(t->client_, o.ca.c_str(), nullptr) != 1) {
        return FileError("TLS CA file", o.ca);
      }
    } else if (SSL_CTX_set_default_verify_paths(t->client_) != 1) {
      return Status(Errc::kInvalidArgument, "TLS: the system's default CAs: " + DrainErrors());
    }
    SSL_CTX_set_verify(t->client_, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(t->client_, SSL_VERIFY_NONE, nullptr);
  }
  return std::shared_ptr<const TlsContext>(std::move(t));
}

Result<std::unique_ptr<TlsSession>> TlsContext::NewServer() const {
  if (server_ == nullptr) return Status(Errc::kFailedPrecondition, "TLS: this fabric does not listen");
  SSL* ssl = SSL_new(server_);
  if (ssl == nullptr) return Status(Errc::kInternal, "SSL_new: " + DrainErrors());
  SSL_set_accept_state(ssl);
  return std::make_unique<TlsSession>(ssl, true);
}

Result<std::unique_ptr<TlsSession>> TlsContext::NewClient(const std::string& host) const {
  SSL* ssl = SSL_new(client_);
  if (ssl == nullptr) return Status(Errc::kInternal, "SSL_new: " + DrainErrors());
  auto session = std::make_unique<TlsSession>(ssl, false);  // owns `ssl` from here on
  const std::string& name = server_name_.empty() ? host : server_name_;
  const bool ip = IsIpAddress(name);
  if (!ip && !name.empty()) SSL_set_tlsext_host_name(ssl, name.c_str());  // SNI
  if (verify_peer_ && verify_name_) {
    if (name.empty()) return Status(Errc::kInvalidArgument, "TLS: no server name to verify");
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    const int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                      : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
    if (ok != 1) return Status(Errc::kInvalidArgument, "TLS: cannot verify the server name '" + name + "'");
  }
  SSL_set_connect_state(ssl);
  return session;
}

}  // namespace rdmq::fabric::internal
