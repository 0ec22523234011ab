// The consumer protocol's subscription and assignment blobs (consumer_protocol.h).
#include "rdmq/kafka/consumer_protocol.h"

#include "tests/kafka/kafka_test_util.h"
#include "tests/kafka/samples.h"
#include "tests/support/test_util.h"

namespace rdmq::kafka::test {
namespace {

TEST_CASE("kafka consumer protocol: subscription versions 0-3 by hand", "[kafka]") {
  const Bytes v0 = Hex("0000  00000002 0001'a' 0001'b'  00000002 'ud'");
  ConsumerProtocolSubscription s;
  REQUIRE_OK(DecodeConsumerSubscription(v0, &s));
  CHECK(s.version == 0);
  CHECK(s.topics == std::vector<std::string_view>{"a", "b"});
  REQUIRE(s.user_data.has_value());
  CHECK(Str(*s.user_data) == "ud");
  CHECK(s.generation_id == -1);

  const Bytes v3 =
      Hex("0003"
          "00000001 0001'a'"                             // topics
          "ffffffff"                                     // user_data null
          "00000001 0001'a' 00000002 00000000 00000002"  // owned_partitions a: [0, 2]
          "00000007"                                     // generation_id
          "0006'rack-1'");                               // rack_id
  REQUIRE_OK(DecodeConsumerSubscription(v3, &s));
  CHECK(s.version == 3);
  CHECK_FALSE(s.user_data.has_value());
  REQUIRE(s.owned_partitions.size() == 1);
  CHECK(s.owned_partitions[0].topic == "a");
  CHECK(s.owned_partitions[0].partitions == std::vector<int32_t>{0, 2});
  CHECK(s.generation_id == 7);
  CHECK(s.rack_id == std::optional<std::string_view>("rack-1"));

  Writer w;
  EncodeConsumerSubscription(w, s);
  CHECK(w.Flatten() == v3);
}

TEST_CASE("kafka consumer protocol: newer versions are read with the known fields", "[kafka]") {
  // A version 9 subscription: the v3 fields, then bytes of fields rdmq does not know.
  const Bytes v9 = Hex("0009 00000000 ffffffff 00000000 00000001 ffff  deadbeef");
  ConsumerProtocolSubscription s;
  REQUIRE_OK(DecodeConsumerSubscription(v9, &s));
  CHECK(s.version == 9);
  CHECK(s.generation_id == 1);
  CHECK_FALSE(s.rack_id.has_value());

  const Bytes a5 = Hex("0005 00000001 0001't' 00000001 00000004 00000000  0102");
  ConsumerProtocolAssignment a;
  REQUIRE_OK(DecodeConsumerAssignment(a5, &a));
  CHECK(a.version == 5);
  REQUIRE(a.assigned_partitions.size() == 1);
  CHECK(a.assigned_partitions[0].partitions == std::vector<int32_t>{4});
  REQUIRE(a.user_data.has_value());
  CHECK(a.user_data->empty());

  // Old versions with extra bytes after their fields are tolerated too.
  const Bytes a0 = Hex("0000 00000000 ffffffff 00");
  REQUIRE_OK(DecodeConsumerAssignment(a0, &a));
  CHECK(a.version == 0);
}

TEST_CASE("kafka consumer protocol: bad blobs are refused", "[kafka]") {
  ConsumerProtocolSubscription s;
  ConsumerProtocolAssignment a;
  CHECK(DecodeConsumerSubscription(Hex("ffff 00000000 ffffffff"), &s).is(KafkaErrc::kMalformed));
  CHECK(DecodeConsumerSubscription(Hex(""), &s).is(KafkaErrc::kTruncated));
  CHECK(DecodeConsumerSubscription(Hex("0000 7fffffff"), &s).is(KafkaErrc::kBadLength));
  CHECK(DecodeConsumerAssignment(Hex("0001 00000001 0001't' 00000001"), &a).is(KafkaErrc::kBadLength));
  CHECK(DecodeConsumerAssignment(Hex("0001 00000001 0001't' 00000001 0000"), &a).is(KafkaErrc::kBadLength));
  CHECK(DecodeConsumerAssignment(Hex("0001 00000001 0001't' 00000000 0000"), &a).is(KafkaErrc::kTruncated));
  // A v1 subscription lacking its owned partitions.
  CHECK_FALSE(DecodeConsumerSubscription(Hex("0001 00000000 ffffffff"), &s).ok());
}

TEST_CASE("kafka consumer protocol: round trips at every version, truncation fails", "[kafka]") {
  for (int16_t v = 0; v <= kConsumerSubscriptionVersion; ++v) {
    ConsumerProtocolSubscription s = Sample<ConsumerProtocolSubscription>();
    s.version = v;
    Writer w;
    EncodeConsumerSubscription(w, s);
    const Bytes b = w.Flatten();
    ConsumerProtocolSubscription d;
    REQUIRE_OK(DecodeConsumerSubscription(b, &d));
    Writer w2;
    EncodeConsumerSubscription(w2, d);
    CHECK(w2.Flatten() == b);
    for (size_t n = 0; n < b.size(); ++n) {
      CHECK_FALSE(DecodeConsumerSubscription(ByteSpan(b).first(n), &d).ok());
    }
  }
  for (int16_t v = 0; v <= kConsumerAssignmentVersion; ++v) {
    ConsumerProtocolAssignment a = Sample<ConsumerProtocolAssignment>();
    a.version = v;
    Writer w;
    EncodeConsumerAssignment(w, a);
    const Bytes b = w.Flatten();
    ConsumerProtocolAssignment d;
    REQUIRE_OK(DecodeConsumerAssignment(b, &d));
    CHECK(d.assigned_partitions.size() == 2);
    CHECK(Str(*d.user_data) == "user");
    for (size_t n = 0; n < b.size(); ++n) {
      CHECK_FALSE(DecodeConsumerAssignment(ByteSpan(b).first(n), &d).ok());
    }
  }
}

}  // namespace
}  // namespace rdmq::kafka::test
