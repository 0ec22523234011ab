// The client's TLS keys (security.protocol and ssl.*): what the fabric is told, and settings that
// cannot work refused before anything connects, naming the key.
#include <catch2/catch.hpp>

#include "rdmq/client/admin.h"
#include "rdmq/client/connection.h"
#include "rdmq/client/options.h"
#include "support/test_util.h"

namespace rdmq::client {
namespace {

using fabric::Provider;

TEST_CASE("security.protocol and ssl.* become the fabric's TLS settings", "[client][tls]") {
  ClientOptions o;
  auto t = TlsOptionsOf(o, Provider::kTcp);
  REQUIRE_OK(t);
  CHECK_FALSE(t->enabled);  // PLAINTEXT by default
  REQUIRE_OK(o.Set("security.protocol", "SSL"));
  REQUIRE_OK(o.Set("ssl.ca.location", "/etc/rdmq/ca.pem"));
  REQUIRE_OK(o.Set("ssl.certificate.location", "/etc/rdmq/me.pem"));
  REQUIRE_OK(o.Set("ssl.key.location", "/etc/rdmq/me.key"));
  t = TlsOptionsOf(o, Provider::kTcp);
  REQUIRE_OK(t);
  CHECK(t->enabled);
  CHECK(t->ca == "/etc/rdmq/ca.pem");
  CHECK(t->certificate == "/etc/rdmq/me.pem");
  CHECK(t->key == "/etc/rdmq/me.key");
  CHECK(t->verify_peer);
  CHECK(t->verify_name);
  REQUIRE_OK(o.Set("ssl.endpoint.identification.algorithm", "none"));
  REQUIRE_OK(o.Set("enable.ssl.certificate.verification", "false"));
  t = TlsOptionsOf(o, Provider::kTcp);
  REQUIRE_OK(t);
  CHECK_FALSE(t->verify_name);
  CHECK_FALSE(t->verify_peer);
  // SASL_SSL is SSL (the login follows when the broker asks); SASL_PLAINTEXT is PLAINTEXT.
  REQUIRE_OK(o.Set("security.protocol", "SASL_SSL"));
  CHECK(TlsOptionsOf(o, Provider::kTcp)->enabled);
  REQUIRE_OK(o.Set("security.protocol", "SASL_PLAINTEXT"));
  CHECK_FALSE(TlsOptionsOf(o, Provider::kTcp)->enabled);
  // Bad values name the key.
  CHECK(o.Set("security.protocol", "TLS").ToString().find("security.protocol=TLS") != std::string::npos);
  CHECK(o.Set("ssl.endpoint.identification.algorithm", "dns").is(Errc::kInvalidArgument));
}

TEST_CASE("TLS settings that cannot work are refused before connecting, naming the key", "[client][tls]") {
  ClientOptions o;
  REQUIRE_OK(o.Set("security.protocol", "SSL"));
  // TLS is for tcp brokers.
  for (const char* address : {"unix:/tmp/rdmq.sock", "verbs:10.0.0.1:9192"}) {
    o.bootstrap = address;
    auto a = AdminClient::Connect(o);
    REQUIRE_FALSE(a.ok());
    CHECK(a.status().ToString().find("security.protocol=SSL: TLS is for tcp") != std::string::npos);
  }
  // A certificate without its key, and the other way round.
  o.bootstrap = "tcp:127.0.0.1:1";
  REQUIRE_OK(o.Set("ssl.certificate.location", "/etc/rdmq/me.pem"));
  auto a = AdminClient::Connect(o);
  REQUIRE_FALSE(a.ok());
  CHECK(a.status().ToString().find("ssl.certificate.location is set without ssl.key.location") !=
        std::string::npos);
  REQUIRE_OK(o.Set("ssl.certificate.location", ""));
  REQUIRE_OK(o.Set("ssl.key.location", "/etc/rdmq/me.key"));
  CHECK(AdminClient::Connect(o).status().ToString().find("ssl.key.location is set without") !=
        std::string::npos);
  // A CA file that is not there: the fabric names the file, the client the keys.
  REQUIRE_OK(o.Set("ssl.key.location", ""));
  REQUIRE_OK(o.Set("ssl.ca.location", "/nonexistent/ca.pem"));
  const std::string s = AdminClient::Connect(o).status().ToString();
  CHECK(s.find("/nonexistent/ca.pem") != std::string::npos);
  CHECK(s.find("ssl.ca.location") != std::string::npos);
}

}  // namespace
}  // namespace rdmq::client
