// Frame size prefixes, request and response headers, the api table and the ApiVersions answer
// rules (frame.h, api.h, api_versions.h).
#include "rdmq/kafka/frame.h"

#include <set>

#include "rdmq/kafka/api.h"
#include "rdmq/kafka/api_versions.h"
#include "tests/kafka/kafka_test_util.h"
#include "tests/support/test_util.h"

namespace rdmq::kafka::test {
namespace {

Result<int32_t> Length(const char* hex, int32_t max) {
  const Bytes b = Hex(hex);
  return FrameLength(std::span<const std::byte, 4>(b.data(), 4), max);
}

TEST_CASE("kafka frame: size prefix bounds", "[kafka]") {
  REQUIRE(Length("00000001", 100).ok());
  CHECK(*Length("00000001", 100) == 1);
  CHECK(*Length("00000064", 100) == 100);
  const auto too_big = Length("00000065", 100);
  REQUIRE(too_big.status().is(KafkaErrc::kFrameTooLarge));
  CHECK(too_big.status().ToString().find("101") != std::string::npos);
  const auto zero = Length("00000000", 100);
  CHECK(zero.status().is(KafkaErrc::kBadFrameSize));
  const auto negative = Length("ffffffff", 100);
  REQUIRE(negative.status().is(KafkaErrc::kBadFrameSize));
  CHECK(negative.status().ToString().find("-1") != std::string::npos);
  CHECK(Length("7fffffff", kDefaultMaxFrameBytes).status().is(KafkaErrc::kFrameTooLarge));
}

TEST_CASE("kafka frame: request header v1 and v2", "[kafka]") {
  // Metadata v1: header v1, no tagged fields; the body follows.
  const Bytes v1 = Hex("0003 0001 0000002a 0006'client'  ffffffff");
  Reader r(v1);
  auto h = DecodeRequestHeader(r);
  REQUIRE_OK(h);
  CHECK(h->key() == ApiKey::kMetadata);
  CHECK(h->api_version == 1);
  CHECK(h->correlation_id == 42);
  CHECK(h->client_id == std::optional<std::string_view>("client"));
  CHECK(r.offset() == 16);

  // Null client id.
  const Bytes null_client = Hex("000c 0000 00000001 ffff");
  Reader rn(null_client);
  auto hn = DecodeRequestHeader(rn);
  REQUIRE_OK(hn);
  CHECK_FALSE(hn->client_id.has_value());

  // ApiVersions v3: header v2, a tagged field that is skipped.
  const Bytes v2 = Hex("0012 0003 00000007 0001'c' 01 07 02 abcd  0000");
  Reader r2(v2);
  auto h2 = DecodeRequestHeader(r2);
  REQUIRE_OK(h2);
  CHECK(h2->key() == ApiKey::kApiVersions);
  CHECK(r2.offset() == 16);
}

TEST_CASE("kafka frame: unknown apis and versions still yield the header", "[kafka]") {
  // ApiVersions v4 (flexible in Kafka, newer than rdmq): header v2 is parsed; the caller answers
  // UNSUPPORTED_VERSION.
  const Bytes av4 = Hex("0012 0004 00000009 0003'abc' 00  0b'librdkafka' 06'2.0.2' 00");
  Reader r(av4);
  auto h = DecodeRequestHeader(r);
  REQUIRE_OK(h);
  CHECK(h->api_version == 4);
  CHECK(h->correlation_id == 9);
  CHECK_FALSE(Supported(h->key(), h->api_version));
  // Metadata v12 (flexible): the header's tagged section is consumed.
  const Bytes md12 = Hex("0003 000c 00000005 ffff 00");
  Reader rm(md12);
  REQUIRE_OK(DecodeRequestHeader(rm));
  CHECK(rm.remaining() == 0);
  // An api key Kafka does not have: header v1.
  const Bytes unknown = Hex("1234 0000 00000003 0000");
  Reader ru(unknown);
  auto hu = DecodeRequestHeader(ru);
  REQUIRE_OK(hu);
  CHECK(hu->api_key == 0x1234);
  CHECK(ApiName(hu->key()) == "Unknown");

  const Status unknown_api = CheckSupported(*hu);
  CHECK(unknown_api.is(KafkaErrc::kUnknownApi));
  CHECK(unknown_api.ToString().find("api key 4660 (Unknown) v0, correlation id 3") != std::string::npos);
  const Status newer = CheckSupported(*h);
  CHECK(newer.is(KafkaErrc::kUnsupportedVersion));
  CHECK(newer.ToString().find("ApiVersions) v4, correlation id 9: rdmq supports v0-3") != std::string::npos);
  CHECK(CheckSupported(RequestHeader{3, 8, 1, std::nullopt}).ok());
  CHECK(CheckSupported(RequestHeader{17, 1, 1, std::nullopt}).ok());  // SaslHandshake v1
  CHECK(CheckSupported(RequestHeader{17, 2, 1, std::nullopt}).is(KafkaErrc::kUnsupportedVersion));
  CHECK(CheckSupported(RequestHeader{21, 0, 1, std::nullopt}).is(KafkaErrc::kUnknownApi));  // DeleteRecords
}

TEST_CASE("kafka frame: truncated headers fail, naming the correlation id once known", "[kafka]") {
  const Bytes full = Hex("0003 0001 0000002a 0006'client'");
  for (size_t n = 0; n < full.size(); ++n) {
    Reader r(ByteSpan(full).first(n));
    const auto h = DecodeRequestHeader(r);
    INFO(n);
    REQUIRE_FALSE(h.ok());
    CHECK(h.status().is(KafkaErrc::kTruncated));
    if (n >= 8) CHECK(h.status().ToString().find("correlation id 42") != std::string::npos);
  }
}

TEST_CASE("kafka frame: response headers", "[kafka]") {
  Writer w0;
  EncodeResponseHeader(w0, 0x01020304, ApiKey::kMetadata, 8);
  CHECK(w0.Flatten() == Hex("01020304"));
  Writer w1;
  EncodeResponseHeader(w1, 7, ApiKey::kMetadata, 9);  // flexible: header v1
  CHECK(w1.Flatten() == Hex("00000007 00"));
  Writer w2;
  EncodeResponseHeader(w2, 7, ApiKey::kApiVersions, 3);  // ApiVersions: always v0
  CHECK(w2.Flatten() == Hex("00000007"));
}

TEST_CASE("kafka api: the supported table", "[kafka]") {
  const auto apis = SupportedApis();
  CHECK(apis.size() == 22);
  std::set<int16_t> keys;
  for (const VersionRange& r : apis) {
    keys.insert(static_cast<int16_t>(r.key));
    CHECK(r.min <= r.max);
    CHECK(ApiName(r.key) != "Unknown");
    CHECK(Supported(r.key, r.min));
    CHECK(Supported(r.key, r.max));
    CHECK_FALSE(Supported(r.key, static_cast<int16_t>(r.max + 1)));
    CHECK_FALSE(Supported(r.key, static_cast<int16_t>(r.min - 1)));
    for (int16_t v = r.min; v <= r.max; ++v) {
      // Only ApiVersions v3 is flexible among the supported versions.
      CHECK(FlexibleRequest(r.key, v) == (r.key == ApiKey::kApiVersions && v == 3));
      CHECK(ResponseHeaderVersion(r.key, v) == 0);
    }
  }
  CHECK(keys.size() == 22);
  CHECK(*FindApi(ApiKey::kProduce) == VersionRange{ApiKey::kProduce, 3, 8});
  CHECK(*FindApi(ApiKey::kFetch) == VersionRange{ApiKey::kFetch, 4, 11});
  CHECK(*FindApi(ApiKey::kMetadata) == VersionRange{ApiKey::kMetadata, 0, 8});
  CHECK(*FindApi(ApiKey::kSaslHandshake) == VersionRange{ApiKey::kSaslHandshake, 0, 1});
  CHECK(FindApi(static_cast<ApiKey>(21)) == nullptr);  // DeleteRecords: not implemented
  CHECK(ApiName(static_cast<ApiKey>(17)) == "SaslHandshake");
  CHECK(RequestHeaderVersion(ApiKey::kApiVersions, 3) == 2);
  CHECK(RequestHeaderVersion(ApiKey::kProduce, 8) == 1);
  CHECK(RequestHeaderVersion(ApiKey::kProduce, 9) == 2);
  CHECK(ResponseHeaderVersion(ApiKey::kFetch, 12) == 1);
}

TEST_CASE("kafka api_versions: supported versions are answered in kind, newer ones in v0", "[kafka]") {
  for (int16_t v = 0; v <= 3; ++v) {
    const ApiVersionsAnswer a = AnswerApiVersions(v);
    CHECK(a.version == v);
    CHECK(a.response.error_code == ErrorCode::kNone);
    CHECK(a.response.api_keys.size() == SupportedApis().size());
  }
  for (int16_t v : {int16_t{4}, int16_t{127}, int16_t{-1}}) {
    const ApiVersionsAnswer a = AnswerApiVersions(v);
    CHECK(a.version == 0);
    CHECK(a.response.error_code == ErrorCode::kUnsupportedVersion);
    CHECK(a.response.api_keys.size() == SupportedApis().size());
  }
}

TEST_CASE("kafka errors: names and codes", "[kafka]") {
  CHECK(ErrorName(ErrorCode::kNone) == "NONE");
  CHECK(ErrorName(ErrorCode::kUnknownServerError) == "UNKNOWN_SERVER_ERROR");
  CHECK(static_cast<int16_t>(ErrorCode::kUnknownTopicOrPartition) == 3);
  CHECK(static_cast<int16_t>(ErrorCode::kNotCoordinator) == 16);
  CHECK(static_cast<int16_t>(ErrorCode::kUnsupportedVersion) == 35);
  CHECK(static_cast<int16_t>(ErrorCode::kInvalidRequest) == 42);
  CHECK(static_cast<int16_t>(ErrorCode::kMemberIdRequired) == 79);
  CHECK(static_cast<int16_t>(ErrorCode::kFencedInstanceId) == 82);
  CHECK(static_cast<int16_t>(ErrorCode::kUnstableOffsetCommit) == 88);
  CHECK(ErrorName(ErrorCode::kFencedInstanceId) == "FENCED_INSTANCE_ID");
  CHECK(ErrorName(static_cast<ErrorCode>(1000)) == "UNKNOWN_ERROR_CODE");
  const Status s(KafkaErrc::kTruncated, "x at byte 3");
  CHECK(s.is(Errc::kCorruption));
  CHECK(Status(KafkaErrc::kUnsupportedVersion).is(Errc::kUnsupported));
}

}  // namespace
}  // namespace rdmq::kafka::test
