#include "broker/kafka/tls.h"

#include <openssl/ssl.h>

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
