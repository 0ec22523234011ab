#include "rdmq/broker/config.h"

#include <catch2/catch.hpp>

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
  CHECK(c.ControlAddress() == "0.0.0.0:9192");
  CHECK(Validate(c).ok());
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
