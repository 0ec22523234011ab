// Every request and response at every supported version: encode a populated sample, decode it,
// encode again and get the same bytes; every truncated prefix and a trailing byte are rejected;
// versions outside the supported range are refused.
#include <string>

#include "rdmq/kafka/messages.h"
#include "tests/kafka/kafka_test_util.h"
#include "tests/kafka/samples.h"
#include "tests/support/test_util.h"

namespace rdmq::kafka::test {
namespace {

template <class M>
void CheckRoundTrip(ApiKey key, const char* type) {
  const VersionRange* range = FindApi(key);
  REQUIRE(range != nullptr);
  const M sample = Sample<M>();
  for (int16_t v = range->min; v <= range->max; ++v) {
    INFO(type << " v" << v);
    const Bytes bytes = EncodeBytes(v, sample);
    Reader r(bytes);
    M decoded;
    REQUIRE_OK(Decode(r, v, &decoded));
    CHECK(EncodeBytes(v, decoded) == bytes);

    // Every strict prefix fails (nothing in a message is optional once its version is known).
    for (size_t n = 0; n < bytes.size(); ++n) {
      Reader pr(ByteSpan(bytes).first(n));
      M partial;
      const Status s = Decode(pr, v, &partial);
      if (s.ok()) FAIL_CHECK("prefix of " << n << " of " << bytes.size() << " bytes decoded");
    }
    // A byte after the end is refused.
    Bytes longer = bytes;
    longer.push_back(std::byte{0});
    Reader lr(longer);
    M extra;
    const Status s = Decode(lr, v, &extra);
    CHECK(s.is(KafkaErrc::kTrailingBytes));
  }
  // Versions outside the range.
  for (const int16_t v : {static_cast<int16_t>(range->min - 1), static_cast<int16_t>(range->max + 1)}) {
    const Bytes bytes = EncodeBytes(range->max, sample);
    Reader r(bytes);
    M decoded;
    CHECK(Decode(r, v, &decoded).is(KafkaErrc::kUnsupportedVersion));
  }
}

TEST_CASE("kafka: every request round-trips at every supported version and rejects truncation", "[kafka]") {
#define RDMQ_KAFKA_CHECK_REQUEST_(key, Req, Resp) CheckRoundTrip<Req>(ApiKey::key, #Req);
  RDMQ_KAFKA_TEST_APIS(RDMQ_KAFKA_CHECK_REQUEST_)
#undef RDMQ_KAFKA_CHECK_REQUEST_
}

TEST_CASE("kafka: every response round-trips at every supported version and rejects truncation", "[kafka]") {
#define RDMQ_KAFKA_CHECK_RESPONSE_(key, Req, Resp) CheckRoundTrip<Resp>(ApiKey::key, #Resp);
  RDMQ_KAFKA_TEST_APIS(RDMQ_KAFKA_CHECK_RESPONSE_)
#undef RDMQ_KAFKA_CHECK_RESPONSE_
}

TEST_CASE("kafka: decoded requests hold the sample's values and view the frame", "[kafka]") {
  const ProduceRequest sample = Sample<ProduceRequest>();
  const Bytes bytes = EncodeBytes(7, sample);
  Reader r(bytes);
  ProduceRequest m;
  REQUIRE_OK(Decode(r, 7, &m));
  REQUIRE(m.transactional_id == std::optional<std::string_view>("tx-1"));
  CHECK(m.acks == -1);
  CHECK(m.timeout_ms == 30000);
  REQUIRE(m.topics.size() == 2);
  CHECK(m.topics[0].name == "orders");
  REQUIRE(m.topics[0].partitions.size() == 2);
  CHECK(m.topics[0].partitions[1].index == 3);
  CHECK_FALSE(m.topics[0].partitions[1].records.has_value());
  const ByteSpan records = *m.topics[0].partitions[0].records;
  CHECK(Str(records) == Str(*sample.topics[0].partitions[0].records));
  // Zero-copy: the records span points into the frame.
  CHECK(records.data() >= bytes.data());
  CHECK(records.data() + records.size() <= bytes.data() + bytes.size());

  // Fields a version lacks keep their defaults.
  const FetchRequest fetch = Sample<FetchRequest>();
  const Bytes fb = EncodeBytes(4, fetch);
  Reader fr(fb);
  FetchRequest f;
  REQUIRE_OK(Decode(fr, 4, &f));
  CHECK(f.isolation_level == 1);
  CHECK(f.session_id == 0);
  CHECK(f.session_epoch == -1);
  CHECK(f.forgotten_topics.empty());
  CHECK(f.rack_id.empty());
  REQUIRE(f.topics.size() == 1);
  CHECK(f.topics[0].partitions[0].current_leader_epoch == -1);
  CHECK(f.topics[0].partitions[0].log_start_offset == -1);
  CHECK(f.topics[0].partitions[0].fetch_offset == 100);
}

TEST_CASE("kafka: nullable arrays: Metadata all topics, OffsetFetch v1 refuses null", "[kafka]") {
  MetadataRequest all;  // topics null: every topic
  const Bytes bytes = EncodeBytes(1, all);
  CHECK(bytes == Hex("ffffffff"));
  Reader r(bytes);
  MetadataRequest m;
  REQUIRE_OK(Decode(r, 1, &m));
  CHECK_FALSE(m.topics.has_value());

  const Bytes null_topics = Hex("0001 'g'  ffffffff");
  Reader r1(null_topics);
  OffsetFetchRequest of;
  CHECK(Decode(r1, 1, &of).is(KafkaErrc::kMalformed));
  Reader r2(null_topics);
  REQUIRE_OK(Decode(r2, 2, &of));
  CHECK(of.group_id == "g");
  CHECK_FALSE(of.topics.has_value());
}

TEST_CASE("kafka: decode errors name the message, the field and the offset", "[kafka]") {
  // Heartbeat v0 whose member id claims 9 bytes but has 2.
  const Bytes bytes = Hex("0001 'g'  00000001  0009 'ab'");
  Reader r(bytes);
  HeartbeatRequest m;
  const Status s = Decode(r, 0, &m);
  REQUIRE(s.is(KafkaErrc::kTruncated));
  const std::string text = s.ToString();
  INFO(text);
  CHECK(text.find("HeartbeatRequest v0") != std::string::npos);
  CHECK(text.find("member_id at byte 7") != std::string::npos);
}

}  // namespace
}  // namespace rdmq::kafka::test
