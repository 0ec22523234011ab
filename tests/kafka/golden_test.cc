// Golden bytes written by hand, field by field, from Kafka's message specifications (not produced
// by this codec): decoding them yields the expected fields, and encoding the same message yields
// the same bytes.
#include "rdmq/group/consumer_protocol.h"
#include "rdmq/kafka/frame.h"
#include "rdmq/kafka/messages.h"
#include "tests/kafka/kafka_test_util.h"
#include "tests/support/test_util.h"

namespace rdmq::kafka::test {
namespace {

// Splits a whole request frame: checks the size prefix, decodes the header, returns a Reader on
// the body through *body.
RequestHeader OpenFrame(const Bytes& frame, Reader* body) {
  REQUIRE(frame.size() >= 4);
  const auto len = FrameLength(std::span<const std::byte, 4>(frame.data(), 4), kDefaultMaxFrameBytes);
  REQUIRE_OK(len);
  REQUIRE(static_cast<size_t>(*len) == frame.size() - 4);
  *body = Reader(ByteSpan(frame).subspan(4));
  auto h = DecodeRequestHeader(*body);
  REQUIRE_OK(h);
  return *h;
}

TEST_CASE("kafka golden: ApiVersions v0 request (kafka-python)", "[kafka]") {
  const Bytes frame =
      Hex("00000016"               // size 22
          "0012"                   // api_key 18 ApiVersions
          "0000"                   // api_version 0
          "00000001"               // correlation_id
          "000c 'kafka-python'");  // client_id
  Reader body({});
  const RequestHeader h = OpenFrame(frame, &body);
  CHECK(h.key() == ApiKey::kApiVersions);
  CHECK(h.api_version == 0);
  CHECK(h.correlation_id == 1);
  CHECK(h.client_id == std::optional<std::string_view>("kafka-python"));
  ApiVersionsRequest m;
  REQUIRE_OK(Decode(body, 0, &m));
  CHECK(m.client_software_name.empty());
}

TEST_CASE("kafka golden: ApiVersions v3 request, flexible header (librdkafka)", "[kafka]") {
  const Bytes frame =
      Hex("00000024"         // size 36
          "0012 0003"        // ApiVersions v3
          "00000001"         // correlation_id
          "0007 'rdkafka'"   // client_id: a classic string even in header v2
          "00"               // header tagged fields: none
          "0b 'librdkafka'"  // client_software_name: compact string, length 10 + 1
          "06 '2.0.2'"       // client_software_version
          "00");             // body tagged fields: none
  Reader body({});
  const RequestHeader h = OpenFrame(frame, &body);
  CHECK(h.api_version == 3);
  CHECK(h.client_id == std::optional<std::string_view>("rdkafka"));
  ApiVersionsRequest m;
  REQUIRE_OK(Decode(body, 3, &m));
  CHECK(m.client_software_name == "librdkafka");
  CHECK(m.client_software_version == "2.0.2");

  Writer w;
  EncodeRequestHeader(w, h);
  Encode(w, 3, m);
  CHECK(w.Flatten() == Bytes(frame.begin() + 4, frame.end()));
}

TEST_CASE("kafka golden: Produce v3 and v7 requests with one partition", "[kafka]") {
  const Bytes v3 =
      Hex("0000 0003 00000005 0001'c'"  // header: Produce v3, correlation 5, client "c"
          "ffff"                        // transactional_id: null
          "0001"                        // acks 1
          "00001388"                    // timeout_ms 5000
          "00000001"                    // topics: 1
          "0005 'topic'"                //   name
          "00000001"                    //   partitions: 1
          "00000000"                    //     index 0
          "0000000a 'ten bytes!'");     //     records (opaque to the codec)
  Reader r3(v3);
  RequestHeader h = *DecodeRequestHeader(r3);
  CHECK(h.key() == ApiKey::kProduce);
  ProduceRequest m3;
  REQUIRE_OK(Decode(r3, h.api_version, &m3));
  CHECK_FALSE(m3.transactional_id.has_value());
  CHECK(m3.acks == 1);
  CHECK(m3.timeout_ms == 5000);
  REQUIRE(m3.topics.size() == 1);
  CHECK(m3.topics[0].name == "topic");
  REQUIRE(m3.topics[0].partitions.size() == 1);
  CHECK(m3.topics[0].partitions[0].index == 0);
  REQUIRE(m3.topics[0].partitions[0].records.has_value());
  CHECK(Str(*m3.topics[0].partitions[0].records) == "ten bytes!");
  CHECK(m3.topics[0].partitions[0].records->data() == v3.data() + v3.size() - 10);
  CHECK(EncodeBytes(3, m3) == Bytes(v3.begin() + 11, v3.end()));

  const Bytes v7 =
      Hex("0000 0007 00000006 ffff"  // header: Produce v7, correlation 6, client id null
          "0002 'tx'"                // transactional_id
          "ffff"                     // acks -1 (all)
          "00007530"                 // timeout_ms 30000
          "00000001 0005 'topic'"    // one topic
          "00000001 00000002"        // one partition: index 2
          "0000000a 'ten bytes!'");
  Reader r7(v7);
  h = *DecodeRequestHeader(r7);
  CHECK(h.api_version == 7);
  CHECK_FALSE(h.client_id.has_value());
  ProduceRequest m7;
  REQUIRE_OK(Decode(r7, 7, &m7));
  CHECK(m7.transactional_id == std::optional<std::string_view>("tx"));
  CHECK(m7.acks == -1);
  CHECK(m7.timeout_ms == 30000);
  CHECK(m7.topics[0].partitions[0].index == 2);
  CHECK(EncodeBytes(7, m7) == Bytes(v7.begin() + 10, v7.end()));
}

TEST_CASE("kafka golden: Metadata v1 response frame", "[kafka]") {
  const Bytes golden =
      Hex("0000004d"                                // size 77
          "0000002a"                                // response header v0: correlation_id 42
          "00000001"                                // brokers: 1
          "00000001 0009'localhost' 00002384 ffff"  // node 1, host, port 9092, rack null
          "00000001"                                // controller_id 1
          "00000001"                                // topics: 1
          "0000 0005'topic' 00"                     //   error 0, name, is_internal false
          "00000001"                                //   partitions: 1
          "0000 00000000 00000001"                  //     error 0, index 0, leader 1
          "00000001 00000001"                       //     replicas [1]
          "00000001 00000001");                     //     isr [1]
  MetadataResponse m;
  m.brokers = {{1, "localhost", 9092, std::nullopt}};
  m.controller_id = 1;
  MetadataTopic t;
  t.name = "topic";
  t.partitions = {{ErrorCode::kNone, 0, 1, -1, {1}, {1}, {}}};
  m.topics = {t};
  Writer w;
  w.ReserveSizePrefix();
  EncodeResponseHeader(w, 42, ApiKey::kMetadata, 1);
  Encode(w, 1, m);
  REQUIRE_OK(w.FinishSizePrefix());
  CHECK(w.Flatten() == golden);

  Reader r(ByteSpan(golden).subspan(8));
  MetadataResponse d;
  REQUIRE_OK(Decode(r, 1, &d));
  CHECK(d.brokers[0].host == "localhost");
  CHECK_FALSE(d.brokers[0].rack.has_value());
  CHECK(d.topics[0].partitions[0].isr_nodes == std::vector<int32_t>{1});
}

// The record bytes of the fetch responses: two spans that must reach the output uncopied.
const std::string kBatch1 = "abc";
const std::string kBatch2 = "defg";

FetchResponse OneTopicFetch() {
  FetchResponse m;
  FetchPartitionResponse p;
  p.index = 0;
  p.high_watermark = 10;
  p.last_stable_offset = 10;
  p.log_start_offset = 0;
  p.records = {Span(kBatch1), Span(kBatch2)};
  m.topics = {{"topic", {p}}};
  return m;
}

void CheckRecordsUncopied(const Writer& w) {
  const auto chunks = w.chunks();
  REQUIRE(chunks.size() == 3);
  CHECK(chunks[1].data() == reinterpret_cast<const std::byte*>(kBatch1.data()));
  CHECK(chunks[2].data() == reinterpret_cast<const std::byte*>(kBatch2.data()));
}

TEST_CASE("kafka golden: Fetch v4 response with record spans", "[kafka]") {
  const Bytes golden =
      Hex("00000000"                 // throttle_time_ms
          "00000001 0005'topic'"     // responses: 1, topic
          "00000001"                 //   partitions: 1
          "00000000 0000"            //     index 0, error 0
          "000000000000000a"         //     high_watermark 10
          "000000000000000a"         //     last_stable_offset 10
          "ffffffff"                 //     aborted_transactions: null
          "00000007 'abc' 'defg'");  //   records: 7 bytes from two spans
  Writer w;
  Encode(w, 4, OneTopicFetch());
  CHECK(w.Flatten() == golden);
  CheckRecordsUncopied(w);

  Reader r(golden);
  FetchResponse d;
  REQUIRE_OK(Decode(r, 4, &d));
  REQUIRE(d.topics[0].partitions[0].records.size() == 1);
  CHECK(Str(d.topics[0].partitions[0].records[0]) == "abcdefg");
  CHECK_FALSE(d.topics[0].partitions[0].aborted_transactions.has_value());
}

TEST_CASE("kafka golden: Fetch v11 response with record spans", "[kafka]") {
  const Bytes golden =
      Hex("00000000 0000 00000000"   // throttle_time_ms, error_code, session_id
          "00000001 0005'topic'"     // responses: 1
          "00000001"                 //   partitions: 1
          "00000000 0000"            //     index 0, error 0
          "000000000000000a"         //     high_watermark 10
          "000000000000000a"         //     last_stable_offset 10
          "0000000000000000"         //     log_start_offset 0
          "00000000"                 //     aborted_transactions: empty
          "ffffffff"                 //     preferred_read_replica -1
          "00000007 'abc' 'defg'");  //     records
  FetchResponse m = OneTopicFetch();
  m.topics[0].partitions[0].aborted_transactions.emplace();
  Writer w;
  Encode(w, 11, m);
  CHECK(w.Flatten() == golden);
  CheckRecordsUncopied(w);
}

TEST_CASE("kafka golden: JoinGroup v5 request with a group instance id", "[kafka]") {
  const Bytes golden =
      Hex("0003'grp'"             // group_id
          "00002710"              // session_timeout_ms 10000
          "000493e0"              // rebalance_timeout_ms 300000
          "0000"                  // member_id: empty (first join)
          "0005'inst1'"           // group_instance_id
          "0008'consumer'"        // protocol_type
          "00000001"              // protocols: 1
          "0005'range'"           //   name
          "00000015"              //   metadata: 21 bytes, a consumer subscription v1:
          "0001"                  //     version 1
          "00000001 0005'topic'"  //  topics ["topic"]
          "ffffffff"              //     user_data null
          "00000000");            //     owned_partitions: none
  Reader r(golden);
  JoinGroupRequest m;
  REQUIRE_OK(Decode(r, 5, &m));
  CHECK(m.group_id == "grp");
  CHECK(m.session_timeout_ms == 10000);
  CHECK(m.rebalance_timeout_ms == 300000);
  CHECK(m.member_id.empty());
  CHECK(m.group_instance_id == std::optional<std::string_view>("inst1"));
  CHECK(m.protocol_type == "consumer");
  REQUIRE(m.protocols.size() == 1);
  CHECK(m.protocols[0].name == "range");
  const auto& md = m.protocols[0].metadata;
  auto sub = group::ParseConsumerSubscription({reinterpret_cast<const char*>(md.data()), md.size()});
  REQUIRE_OK(sub);
  CHECK(sub->version == 1);
  CHECK(sub->topics == std::vector<std::string>{"topic"});
  CHECK_FALSE(sub->user_data.has_value());
  CHECK(sub->owned.empty());
  CHECK(EncodeBytes(5, m) == golden);

  // The same bytes are not a v4 request (no group_instance_id there): trailing bytes.
  Reader r4(golden);
  JoinGroupRequest m4;
  CHECK_FALSE(Decode(r4, 4, &m4).ok());
}

TEST_CASE("kafka golden: ApiVersions v3 response with a v0 header", "[kafka]") {
  const Bytes golden =
      Hex("000000a6"           // size 166
          "00000001"           // response header v0: correlation id, no tagged fields
          "0000"               // error_code NONE
          "17"                 // api_keys: compact array of 22 (+1)
          "0000 0003 0008 00"  // Produce 3-8, no tagged fields
          "0001 0004 000b 00"  // Fetch 4-11
          "0002 0001 0005 00"  // ListOffsets 1-5
          "0003 0000 0008 00"  // Metadata 0-8
          "0008 0002 0007 00"  // OffsetCommit 2-7
          "0009 0001 0005 00"  // OffsetFetch 1-5
          "000a 0000 0002 00"  // FindCoordinator 0-2
          "000b 0000 0005 00"  // JoinGroup 0-5
          "000c 0000 0003 00"  // Heartbeat 0-3
          "000d 0000 0003 00"  // LeaveGroup 0-3
          "000e 0000 0003 00"  // SyncGroup 0-3
          "000f 0000 0004 00"  // DescribeGroups 0-4
          "0010 0000 0002 00"  // ListGroups 0-2
          "0011 0000 0001 00"  // SaslHandshake 0-1
          "0012 0000 0003 00"  // ApiVersions 0-3
          "0013 0000 0004 00"  // CreateTopics 0-4
          "0014 0000 0003 00"  // DeleteTopics 0-3
          "0016 0000 0001 00"  // InitProducerId 0-1
          "0020 0000 0002 00"  // DescribeConfigs 0-2
          "0024 0000 0001 00"  // SaslAuthenticate 0-1
          "0025 0000 0001 00"  // CreatePartitions 0-1
          "002a 0000 0001 00"  // DeleteGroups 0-1
          "00000000"           // throttle_time_ms
          "00");               // tagged fields: none
  Writer w;
  WriteApiVersionsReply(w, 1, 3);
  CHECK(w.Flatten() == golden);
}

TEST_CASE("kafka golden: ApiVersions v4 request answered in v0 with UNSUPPORTED_VERSION", "[kafka]") {
  Writer w;
  WriteApiVersionsReply(w, 9, 4);
  const Bytes out = w.Flatten();
  const Bytes prefix =
      Hex("0000008e"        // size 142 = 4 + 2 + 4 + 22 * 6
          "00000009"        // correlation id
          "0023"            // error_code 35 UNSUPPORTED_VERSION
          "00000016"        // api_keys: classic array of 22
          "0000 0003 0008"  // Produce 3-8, v0 entries have no tagged fields
          "0001 0004 000b");
  REQUIRE(out.size() == 146);
  CHECK(Bytes(out.begin(), out.begin() + static_cast<long>(prefix.size())) == prefix);
  CHECK(Bytes(out.end() - 6, out.end()) == Hex("002a 0000 0001"));  // DeleteGroups 0-1, then nothing
}

}  // namespace
}  // namespace rdmq::kafka::test
