// TLS on the tcp fabric's control and data listeners (rpc.security.protocol=SSL), against a
// broker in this process and the test CA of support/pki.h: clients with security.protocol=SSL
// administer, produce and consume (the data endpoint inside TLS too); a client without TLS, one
// trusting another CA, and one checking a name the broker's certificate does not hold are
// refused; with ssl.client.auth=required only clients with a certificate from ssl.ca.location
// are served (producers and consumers included); with ACLs the certificate's CN is the user;
// bad key files stop the broker at start, naming the key. (A plaintext broker with plaintext clients is what
// every other tcp test runs.)
#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "inproc_broker.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/producer.h"
#include "security_util.h"
#include "support/pki.h"
#include "support/test_util.h"

namespace rdmq::broker::test {
namespace {

using namespace std::chrono_literals;

BrokerConfig TlsConfig(const rdmq::test::TempDir& dir, const rdmq::test::Pki& pki,
                       const std::string& client_auth = "none", const std::string& cert = "server") {
  BrokerConfig cfg = TestConfig(dir, "tcp");
  cfg.rpc_security_protocol = "SSL";
  cfg.ssl_certificate = pki(cert + ".pem");
  cfg.ssl_key = pki(cert + ".key");
  cfg.ssl_ca = pki("ca.pem");
  cfg.ssl_client_auth = client_auth;
  return cfg;
}

// A client of `bootstrap` over TLS trusting `ca`, presenting `cert` (none if empty).
client::ClientOptions TlsClient(const std::string& bootstrap, const rdmq::test::Pki& pki,
                                const std::string& ca = "ca.pem", const std::string& cert = "") {
  client::ClientOptions o;
  o.bootstrap = bootstrap;
  o.request_timeout = 10s;
  REQUIRE_OK(o.Set("security.protocol", "SSL"));
  REQUIRE_OK(o.Set("ssl.ca.location", pki(ca)));
  if (!cert.empty()) {
    REQUIRE_OK(o.Set("ssl.certificate.location", pki(cert + ".pem")));
    REQUIRE_OK(o.Set("ssl.key.location", pki(cert + ".key")));
  }
  return o;
}

std::string Refusal(const client::ClientOptions& o) {
  auto a = client::AdminClient::Connect(o);
  return a.ok() ? std::string("connected") : a.status().ToString();
}

// Creates `topic`, produces `n` records with a producer and reads them back with a consumer.
void RoundTrip(const client::ClientOptions& opts, const std::string& topic, int n = 200) {
  auto admin = client::AdminClient::Connect(opts);
  REQUIRE_OK(admin);
  REQUIRE_OK((*admin)->CreateTopic(topic, {{"partitions", "2"}}));
  auto described = (*admin)->DescribeTopic(topic);
  REQUIRE_OK(described);
  CHECK(described->partition_count() == 2);
  producer::ProducerConfig pc;
  pc.client = opts;
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  for (int i = 0; i < n; ++i) {
    REQUIRE_OK((*p)->Send({.topic = topic, .partition = i % 2, .value = "v" + std::to_string(i)}, nullptr));
  }
  REQUIRE_OK((*p)->Flush(30s));
  consumer::ConsumerConfig cc;
  cc.client = opts;
  auto c = consumer::Consumer::Create(cc);
  REQUIRE_OK(c);
  REQUIRE_OK((*c)->Assign({{topic, 0}, {topic, 1}}));
  std::vector<int> next(2, 0);  // per partition, the index of the next record expected
  int got = 0;
  for (int round = 0; round < 200 && got < n; ++round) {
    auto recs = (*c)->Poll(200ms);
    REQUIRE_OK(recs);
    for (const auto& rec : *recs) {
      const int part = rec.partition;
      REQUIRE((part == 0 || part == 1));
      CHECK(rec.value == "v" + std::to_string(next[static_cast<size_t>(part)] * 2 + part));
      ++next[static_cast<size_t>(part)];
      ++got;
    }
  }
  CHECK(got == n);
}

}  // namespace

TEST_CASE("rpc tls: clients over TLS administer, produce and consume, others are refused",
          "[broker][security][tls]") {
  rdmq::test::Pki pki;
  rdmq::test::TempDir dir;
  auto b = Broker::Start(TlsConfig(dir, pki));
  REQUIRE_OK(b);
  const std::string control = (*b)->control_address();
  REQUIRE(control.starts_with("tcp:127.0.0.1:"));

  RoundTrip(TlsClient(control, pki), "secure");

  // Refused, each saying why.
  client::ClientOptions plain;
  plain.bootstrap = control;
  plain.request_timeout = 10s;
  const std::string no_tls = Refusal(plain);
  CHECK(no_tls.find("security.protocol=SSL") != std::string::npos);
  const std::string rogue = Refusal(TlsClient(control, pki, "rogue-ca.pem"));
  CHECK(rogue.find("certificate verify failed") != std::string::npos);
  // The broker's certificate names localhost and 127.0.0.1: "localhost" works as well.
  const std::string port = control.substr(control.rfind(':') + 1);
  auto by_name = client::AdminClient::Connect(TlsClient("tcp:localhost:" + port, pki));
  CHECK_OK(by_name);
  // Still serving.
  CHECK(Refusal(TlsClient(control, pki)) == "connected");
}

TEST_CASE("rpc tls: a broker certificate without the address is refused unless names are not checked",
          "[broker][security][tls]") {
  rdmq::test::Pki pki;
  rdmq::test::TempDir dir;
  // client.pem (CN=alice, SAN DNS:alice) as the broker's certificate: it does not name 127.0.0.1.
  auto b = Broker::Start(TlsConfig(dir, pki, "none", "client"));
  REQUIRE_OK(b);
  const std::string control = (*b)->control_address();
  const std::string mismatch = Refusal(TlsClient(control, pki));
  CHECK(mismatch.find("IP address mismatch") != std::string::npos);
  client::ClientOptions lax = TlsClient(control, pki);
  REQUIRE_OK(lax.Set("ssl.endpoint.identification.algorithm", "none"));
  RoundTrip(lax, "lax", 50);  // the data endpoint, at the address the broker announces, too
  // Without verification any certificate will do; with it, another CA's will not.
  client::ClientOptions blind = TlsClient(control, pki, "rogue-ca.pem");
  CHECK(Refusal(blind).find("certificate verify failed") != std::string::npos);
  REQUIRE_OK(blind.Set("enable.ssl.certificate.verification", "false"));
  CHECK(Refusal(blind) == "connected");
}

TEST_CASE("rpc tls: ssl.client.auth=required serves only clients with a certificate from ssl.ca.location",
          "[broker][security][tls]") {
  rdmq::test::Pki pki;
  rdmq::test::TempDir dir;
  BrokerConfig cfg = TlsConfig(dir, pki, "required");
  // Facing the network without security.allow.anonymous: the certificates authenticate clients.
  cfg.listen_control = "0.0.0.0:0";
  REQUIRE_OK(Validate(cfg));
  cfg.listen_control = "127.0.0.1:0";
  auto b = Broker::Start(cfg);
  REQUIRE_OK(b);
  const std::string control = (*b)->control_address();
  CHECK(Refusal(TlsClient(control, pki)) != "connected");                            // no certificate
  CHECK(Refusal(TlsClient(control, pki, "ca.pem", "rogue-client")) != "connected");  // another CA's
  client::ClientOptions plain;
  plain.bootstrap = control;
  plain.request_timeout = 10s;
  CHECK(Refusal(plain) != "connected");
  RoundTrip(TlsClient(control, pki, "ca.pem", "client"), "mutual");
}

TEST_CASE("rpc tls: a SCRAM login runs inside TLS", "[broker][security][tls][sasl]") {
  rdmq::test::Pki pki;
  rdmq::test::TempDir dir;
  Provision(dir, {"alice"});
  BrokerConfig cfg = TlsConfig(dir, pki);
  cfg.rpc_sasl_mechanisms = "SCRAM-SHA-512";
  auto b = Broker::Start(cfg);
  REQUIRE_OK(b);
  client::ClientOptions opts = TlsClient((*b)->control_address(), pki);
  CHECK(Refusal(opts).find("asks for a login") != std::string::npos);
  REQUIRE_OK(opts.Set("security.protocol", "SASL_SSL"));
  REQUIRE_OK(opts.Set("sasl.mechanism", "SCRAM-SHA-512"));
  REQUIRE_OK(opts.Set("sasl.username", "alice"));
  REQUIRE_OK(opts.Set("sasl.password", "alice-secret"));
  RoundTrip(opts, "logged-in", 50);
}

TEST_CASE("rpc tls: with ACLs, a client certificate's CN is the user of a client that does not log in",
          "[broker][security][tls][acl]") {
  rdmq::test::Pki pki;
  rdmq::test::TempDir dir;
  using metadata::AclOperation;
  using metadata::AclResourceType;
  // client.pem's CN is alice: she may create, write and read topic "certs", nothing else.
  std::vector<metadata::AclBinding> acls;
  for (AclOperation op : {AclOperation::kCreate, AclOperation::kWrite, AclOperation::kRead}) {
    metadata::AclBinding b;
    b.principal = "User:alice";
    b.operation = op;
    b.resource_type = AclResourceType::kTopic;
    b.resource_name = "certs";
    acls.push_back(b);
  }
  Provision(dir, {}, acls);
  BrokerConfig cfg = TlsConfig(dir, pki, "requested");
  cfg.authorizer_enabled = true;
  auto b = Broker::Start(cfg);
  REQUIRE_OK(b);
  const std::string control = (*b)->control_address();
  RoundTrip(TlsClient(control, pki, "ca.pem", "client"), "certs", 50);
  auto alice = client::AdminClient::Connect(TlsClient(control, pki, "ca.pem", "client"));
  REQUIRE_OK(alice);
  const auto other = (*alice)->CreateTopic("other", {});
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().ToString().find("User:alice may not create topic 'other'") != std::string::npos);
  // Without a certificate (requested, not required) the same client is ANONYMOUS.
  auto anonymous = client::AdminClient::Connect(TlsClient(control, pki));
  REQUIRE_OK(anonymous);
  const auto denied = (*anonymous)->DescribeTopic("certs");
  REQUIRE_FALSE(denied.ok());
  CHECK(denied.status().ToString().find("User:ANONYMOUS") != std::string::npos);
}

TEST_CASE("rpc tls: bad key files stop the broker at start, naming the key", "[broker][security][tls]") {
  rdmq::test::Pki pki;
  const auto refusal = [&](const std::function<void(BrokerConfig&)>& change) {
    rdmq::test::TempDir dir;
    BrokerConfig cfg = TlsConfig(dir, pki);
    cfg.listen_kafka = "off";
    change(cfg);
    auto b = Broker::Start(cfg);
    return b.ok() ? std::string("started") : b.status().ToString();
  };
  CHECK(refusal([&](BrokerConfig& c) { c.ssl_key = pki("nothing.key"); }).find("ssl.key.location") !=
        std::string::npos);
  CHECK(refusal([&](BrokerConfig& c) {
          c.ssl_certificate = pki("nothing.pem");
        }).find("ssl.certificate.location") != std::string::npos);
  const std::string mismatch = refusal([&](BrokerConfig& c) { c.ssl_key = pki("client.key"); });
  CHECK(mismatch.find("ssl.key.location") != std::string::npos);
  CHECK(mismatch.find("does not match") != std::string::npos);
  CHECK(refusal([&](BrokerConfig& c) { c.ssl_key = pki("ca.pem"); }).find("ssl.key.location") !=
        std::string::npos);
  CHECK(refusal([&](BrokerConfig& c) {
          c.ssl_client_auth = "required";
          c.ssl_ca = pki("nothing.pem");
        }).find("ssl.ca.location") != std::string::npos);
  CHECK(refusal([](BrokerConfig&) {}) == "started");
}

}  // namespace rdmq::broker::test
