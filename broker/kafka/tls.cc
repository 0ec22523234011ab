#include "broker/kafka/tls.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace rdmq::broker::internal {

namespace ssl = boost::asio::ssl;

Result<std::unique_ptr<ssl::context>> MakeKafkaTls(const BrokerConfig& cfg) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                       ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                   ec);
  auto bad = [](const char* key, const std::string& file, const std::string& why) {
    return Status(Errc::kInvalidArgument, std::string(key) + "=" + file + ": " + why);
  };
  ctx->use_certificate_chain_file(cfg.ssl_certificate, ec);
  if (ec)
    return bad("ssl.certificate.location", cfg.ssl_certificate,
               "not a PEM certificate chain: " + ec.message());
  ctx->use_private_key_file(cfg.ssl_key, ssl::context::pem, ec);
  // (OpenSSL checks the key against the certificate loaded first: "key values mismatch".)
  if (ec && ec.message().find("mismatch") == std::string::npos) {
    return bad("ssl.key.location", cfg.ssl_key, "not a PEM private key: " + ec.message());
  }
  if (ec || SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    return bad("ssl.key.location", cfg.ssl_key, "does not match the certificate in " + cfg.ssl_certificate);
  }
  if (cfg.ssl_client_auth != "none") {
    ctx->load_verify_file(cfg.ssl_ca, ec);
    if (ec) return bad("ssl.ca.location", cfg.ssl_ca, "not a PEM CA bundle: " + ec.message());
    ctx->set_verify_mode(cfg.ssl_client_auth == "required"
                             ? ssl::verify_peer | ssl::verify_fail_if_no_peer_cert
                             : ssl::verify_peer,
                         ec);
  }
  return ctx;
}

}  // namespace rdmq::broker::internal

namespace rdmq::broker::internal {

std::string KafkaStream::PeerCommonName() {
  if (!tls_) return {};
  SSL* ssl = tls_->native_handle();
  if (SSL_get_verify_result(ssl) != X509_V_OK) return {};
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return {};
  std::string cn;
  X509_NAME* subject = X509_get_subject_name(cert);
  const int at = subject ? X509_NAME_get_index_by_NID(subject, NID_commonName, -1) : -1;
  if (at >= 0) {
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at));
    unsigned char* utf8 = nullptr;
    const int n = ASN1_STRING_to_UTF8(&utf8, data);
    if (n > 0) cn.assign(reinterpret_cast<const char*>(utf8), static_cast<size_t>(n));
    OPENSSL_free(utf8);
  }
  X509_free(cert);
  return cn;
}

}  // namespace rdmq::broker::internal
