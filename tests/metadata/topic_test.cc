#include "rdmq/metadata/topic.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "metadata/topic_json.h"
#include "support/test_util.h"

namespace rdmq::metadata {
namespace {

TEST_CASE("topic names follow Kafka's rules", "[topic]") {
  CHECK(ValidateTopicName("orders").ok());
  CHECK(ValidateTopicName("a.b_c-D9").ok());
  CHECK(ValidateTopicName(std::string(249, 'x')).ok());
  CHECK(ValidateTopicName("").is(MetadataErrc::kBadTopicName));
  CHECK(ValidateTopicName(std::string(250, 'x')).is(MetadataErrc::kBadTopicName));
  CHECK(ValidateTopicName(".").is(MetadataErrc::kBadTopicName));
  CHECK(ValidateTopicName("..").is(MetadataErrc::kBadTopicName));
  CHECK(ValidateTopicName("a/b").is(MetadataErrc::kBadTopicName));
  CHECK(ValidateTopicName("a b").is(Errc::kInvalidArgument));
}

TEST_CASE("config keys parse with Kafka names and reject bad values clearly", "[topic]") {
  TopicConfig c;
  REQUIRE_OK(SetConfig(&c, "retention.ms", "3600000"));
  CHECK(c.retention_ms == 3600000);
  REQUIRE_OK(SetConfig(&c, "retention.bytes", "-1"));
  CHECK(c.retention_bytes == -1);
  REQUIRE_OK(SetConfig(&c, "durability", "visibility"));
  CHECK(c.durability == Durability::kVisibility);
  REQUIRE_OK(SetConfig(&c, "partitions", "12"));
  CHECK(c.partitions == 12);

  Status s = SetConfig(&c, "partitions", "0");
  CHECK(s.is(MetadataErrc::kBadConfig));
  CHECK(s.ToString().find("[1, 4096]") != std::string::npos);
  CHECK(SetConfig(&c, "partitions", "12x").is(MetadataErrc::kBadConfig));
  CHECK(SetConfig(&c, "segment.bytes", "100").is(MetadataErrc::kBadConfig));
  CHECK(SetConfig(&c, "retention.ms", "0").is(MetadataErrc::kBadConfig));
  CHECK(SetConfig(&c, "durability", "maybe").is(MetadataErrc::kBadConfig));
  CHECK(SetConfig(&c, "compression.type", "zstd").is(MetadataErrc::kUnknownConfig));
  CHECK(c.partitions == 12);  // failed sets change nothing
}

TEST_CASE("a batch limit that does not fit in a segment is rejected", "[topic]") {
  TopicConfig c;
  c.segment_bytes = 1 << 20;
  c.max_message_bytes = 1 << 20;
  CHECK(ValidateConfig(c).is(MetadataErrc::kBadConfig));
  c.max_message_bytes = 512 << 10;
  CHECK(ValidateConfig(c).ok());
}

TEST_CASE("configs and topics round-trip through JSON", "[topic]") {
  TopicInfo t{"orders", TopicId(7), TopicConfig{}, 1700000000000};
  t.config.partitions = 3;
  t.config.retention_bytes = 1 << 30;
  auto back = TopicInfoFromJson(ToJson(t));
  REQUIRE_OK(back);
  CHECK(*back == t);

  auto j = nlohmann::json::parse(R"({"partitions": "4", "retention.ms": 1000})");
  auto c = TopicConfigFromJson(j, TopicConfig{});
  REQUIRE_OK(c);
  CHECK(c->partitions == 4);
  CHECK(c->retention_ms == 1000);
  CHECK(TopicConfigFromJson(nlohmann::json::parse(R"({"partitions": true})"), {})
            .status()
            .is(MetadataErrc::kBadConfig));
  CHECK(TopicConfigFromJson(nlohmann::json::parse(R"({"nope": 1})"), {})
            .status()
            .is(MetadataErrc::kUnknownConfig));
  CHECK(TopicConfigFromJson(nlohmann::json::parse("[1]"), {}).status().is(MetadataErrc::kBadConfig));
}

}  // namespace
}  // namespace rdmq::metadata
