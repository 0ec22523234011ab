#include "rdmq/broker/config.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/test_util.h"

namespace rdmq::broker {
namespace {

TEST_CASE("defaults give shm listeners inside the data directory", "[config]") {
  BrokerConfig c;
  c.data_dir = "/d";
  CHECK(c.ControlAddress() == "/d/rdmq.sock");
  CHECK(c.DataAddress() == "/d/rdmq-data.sock");
  CHECK(Validate(c).ok());
  REQUIRE_OK(ApplySetting(&c, "fabric=tcp"));
  CHECK(c.ControlAddress() == "127.0.0.1:9192");
  CHECK(c.DataAddress() == "127.0.0.1:9193");
  CHECK(c.listen_kafka == "127.0.0.1:9092");
  CHECK(c.listen_http == "127.0.0.1:9194");
  CHECK(Validate(c).ok());
}

TEST_CASE("a listener beyond loopback is refused unless security.allow.anonymous", "[config][security]") {
  struct Case {
    const char* key;
    const char* value;
  };
  for (const Case k : {Case{"listen.control", "0.0.0.0:9192"}, Case{"listen.data", "10.1.2.3:0"},
                       Case{"listen.kafka", "0.0.0.0:9092"}, Case{"listen.http", "[::]:9194"},
                       Case{"listen.kafka", "broker.example.com:9092"}}) {
    INFO(k.key << "=" << k.value);
    BrokerConfig c;
    REQUIRE_OK(ApplySetting(&c, "fabric=tcp"));
    REQUIRE_OK(ApplySetting(&c, k.key, k.value));
    const Status s = Validate(c);
    CHECK(s.is(Errc::kInvalidArgument));
    CHECK(s.ToString().find(std::string(k.key) + "=" + k.value) != std::string::npos);
    CHECK(s.ToString().find("security.allow.anonymous=true") != std::string::npos);
    REQUIRE_OK(ApplySetting(&c, "security.allow.anonymous=true"));
    CHECK(Validate(c).ok());
  }
  // Loopback in every spelling is fine, and so is a listener that is off.
  for (const char* v : {"127.0.0.1:0", "127.1.2.3:9092", "[::1]:9092", "localhost:9092", "off"}) {
    BrokerConfig c;
    REQUIRE_OK(ApplySetting(&c, "listen.kafka", v));
    CHECK(Validate(c).ok());
  }
  // On shm the control and data listeners are socket paths: never beyond this host.
  BrokerConfig c;
  c.data_dir = "/d";
  CHECK(Validate(c).ok());
  CHECK(ApplySetting(&c, "listen.http=nonsense").ok());
  CHECK(Validate(c).ToString().find("listen.http=nonsense: must be host:port or off") != std::string::npos);
}

TEST_CASE("a door that logs clients in may face the network, SASL settings that cannot work are refused",
          "[config][security]") {
  // The control path with SCRAM logins: tcp listeners beyond loopback, no allow.anonymous.
  BrokerConfig rpc;
  REQUIRE_OK(ApplySetting(&rpc, "fabric=tcp"));
  REQUIRE_OK(ApplySetting(&rpc, "listen.control=0.0.0.0:9192"));
  REQUIRE_OK(ApplySetting(&rpc, "listen.data=0.0.0.0:9193"));
  CHECK_FALSE(Validate(rpc).ok());
  REQUIRE_OK(ApplySetting(&rpc, "rpc.sasl.enabled.mechanisms=SCRAM-SHA-256, SCRAM-SHA-512"));
  CHECK_OK(Validate(rpc));
  CHECK(rpc.RpcSaslMechanisms() == std::vector<std::string>{"SCRAM-SHA-256", "SCRAM-SHA-512"});
  // ... but not the Kafka listener, which logs nobody in.
  REQUIRE_OK(ApplySetting(&rpc, "listen.kafka=0.0.0.0:9092"));
  CHECK(Validate(rpc).ToString().find("listen.kafka=0.0.0.0:9092") != std::string::npos);
  REQUIRE_OK(ApplySetting(&rpc, "kafka.security.protocol=SASL_PLAINTEXT"));
  CHECK_OK(Validate(rpc));

  struct Case {
    std::vector<const char*> sets;
    const char* says;
  };
  for (const Case& k : std::vector<Case>{
           {{"rpc.sasl.enabled.mechanisms=PLAIN"}, "the control path offers no PLAIN"},
           {{"rpc.sasl.enabled.mechanisms=SCRAM-SHA-1"},
            "'SCRAM-SHA-1' is not one of SCRAM-SHA-256, SCRAM-SHA-512"},
           {{"kafka.security.protocol=SASL_PLAINTEXT", "sasl.enabled.mechanisms=PLAIN"},
            "needs kafka.security.protocol=SASL_SSL"},
           {{"kafka.security.protocol=SASL_PLAINTEXT", "sasl.enabled.mechanisms=,"}, "names no mechanism"},
           {{"kafka.security.protocol=SASL_SSL"}, "needs ssl.certificate.location and ssl.key.location"},
       }) {
    BrokerConfig c;
    for (const char* set : k.sets) REQUIRE_OK(ApplySetting(&c, set));
    const Status s = Validate(c);
    INFO(s.ToString());
    CHECK(s.is(Errc::kInvalidArgument));
    CHECK(s.ToString().find(k.says) != std::string::npos);
  }
}

TEST_CASE(
    "TLS on the control path: required client certificates authenticate, settings that cannot work "
    "are refused",
    "[config][security][tls]") {
  // ssl.client.auth=required on the control and data listeners authenticates their clients:
  // they may listen beyond loopback without allow.anonymous; requested certificates do not.
  BrokerConfig c;
  for (const char* set :
       {"fabric=tcp", "listen.control=0.0.0.0:9192", "listen.data=0.0.0.0:9193", "rpc.security.protocol=SSL",
        "ssl.certificate.location=/etc/rdmq/broker.pem", "ssl.key.location=/etc/rdmq/broker.key",
        "ssl.ca.location=/etc/rdmq/ca.pem", "ssl.client.auth=requested"}) {
    REQUIRE_OK(ApplySetting(&c, set));
  }
  CHECK(c.RpcTls());
  CHECK(Validate(c).ToString().find("listen.control=0.0.0.0:9192") != std::string::npos);
  REQUIRE_OK(ApplySetting(&c, "ssl.client.auth=required"));
  CHECK_OK(Validate(c));
  // ... but not the Kafka listener, which stays plaintext.
  REQUIRE_OK(ApplySetting(&c, "listen.kafka=0.0.0.0:9092"));
  CHECK(Validate(c).ToString().find("listen.kafka=0.0.0.0:9092") != std::string::npos);
  // Without TLS on the control path, the same client.auth authenticates nobody there.
  REQUIRE_OK(ApplySetting(&c, "listen.kafka=127.0.0.1:9092"));
  REQUIRE_OK(ApplySetting(&c, "rpc.security.protocol=PLAINTEXT"));
  CHECK(Validate(c).ToString().find("listen.control=0.0.0.0:9192") != std::string::npos);
  CHECK(ApplySetting(&c, "rpc.security.protocol=TLS").ToString().find("must be PLAINTEXT or SSL") !=
        std::string::npos);

  struct Case {
    std::vector<const char*> sets;
    const char* says;
  };
  for (const Case& k : std::vector<Case>{
           {{"rpc.security.protocol=SSL", "ssl.certificate.location=/c", "ssl.key.location=/k"},
            "rpc.security.protocol=SSL: TLS is for fabric=tcp; shm stays on this host"},
           {{"fabric=verbs", "rpc.security.protocol=SSL", "ssl.certificate.location=/c",
             "ssl.key.location=/k"},
            "the verbs fabric has no TLS yet"},
           {{"fabric=tcp", "rpc.security.protocol=SSL"},
            "needs ssl.certificate.location and ssl.key.location"},
           {{"fabric=tcp", "rpc.security.protocol=SSL", "ssl.certificate.location=/c", "ssl.key.location=/k",
             "ssl.client.auth=required"},
            "ssl.client.auth=required: needs ssl.ca.location"},
       }) {
    BrokerConfig b;
    for (const char* set : k.sets) REQUIRE_OK(ApplySetting(&b, set));
    const Status s = Validate(b);
    INFO(s.ToString());
    CHECK(s.is(Errc::kInvalidArgument));
    CHECK(s.ToString().find(k.says) != std::string::npos);
  }
}

TEST_CASE("JSON files and overrides use Kafka's broker key names", "[config]") {
  BrokerConfig c;
  REQUIRE_OK(ApplyJson(&c, R"({"data.dir": "/var/lib/rdmq", "num.partitions": 6,
                               "log.retention.ms": "60000", "durability": "visibility",
                               "lease.ms": 2000})",
                       "broker.json"));
  CHECK(c.data_dir == "/var/lib/rdmq");
  CHECK(c.topic_defaults.partitions == 6);
  CHECK(c.topic_defaults.retention_ms == 60000);
  CHECK(c.topic_defaults.durability == metadata::Durability::kVisibility);
  CHECK(c.lease_ms == 2000);
  REQUIRE_OK(ApplySetting(&c, "num.partitions=8"));
  CHECK(c.topic_defaults.partitions == 8);
  bool found = false;
  for (const auto& [k, v] : ConfigEntries(c)) {
    if (k == "num.partitions") found = (v == "8");
  }
  CHECK(found);
}

TEST_CASE("bad settings name the key and what is accepted", "[config]") {
  BrokerConfig c;
  Status s = ApplySetting(&c, "fabric=rdma");
  CHECK(s.is(Errc::kInvalidArgument));
  CHECK(s.ToString().find("fabric=rdma: must be shm, tcp or verbs") != std::string::npos);
  CHECK(ApplySetting(&c, "num.partitions=0").ToString().find("num.partitions=0") != std::string::npos);
  CHECK(ApplySetting(&c, "lease.ms=5").is(Errc::kInvalidArgument));
  CHECK(ApplySetting(&c, "no.such.key=1").ToString().find("unknown config key 'no.such.key'") !=
        std::string::npos);
  CHECK(ApplySetting(&c, "novalue").is(Errc::kInvalidArgument));
  CHECK(ApplyJson(&c, "{", "x.json").ToString().find("x.json: not valid JSON") != std::string::npos);
  CHECK(ApplyJson(&c, R"({"lease.ms": 1.5})", "x.json").is(Errc::kInvalidArgument));
  CHECK(ApplyJson(&c, "[]", "x.json").is(Errc::kInvalidArgument));
  CHECK(ApplyFile(&c, "/nonexistent/broker.json").is(Errc::kNotFound));
  c.fabric = "tcp";
  c.listen_control = "localhost";
  CHECK(Validate(c).is(Errc::kInvalidArgument));
}

}  // namespace
}  // namespace rdmq::broker
