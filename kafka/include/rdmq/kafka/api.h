// The Kafka APIs rdmq answers, with the versions of each (docs/kafka-protocol.md, "Supported
// APIs"), and the per-version facts the framing needs: whether a request uses the flexible
// header (v2, with tagged fields) and which response header version answers it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace rdmq::kafka {

// Kafka's api keys for the APIs rdmq implements. Any int16 may be held (a header names what the
// client sent); Supported() says whether rdmq answers it.
enum class ApiKey : int16_t {
  kProduce = 0,
  kFetch = 1,
  kListOffsets = 2,
  kMetadata = 3,
  kOffsetCommit = 8,
  kOffsetFetch = 9,
  kFindCoordinator = 10,
  kJoinGroup = 11,
  kHeartbeat = 12,
  kLeaveGroup = 13,
  kSyncGroup = 14,
  kDescribeGroups = 15,
  kListGroups = 16,
  kSaslHandshake = 17,
  kApiVersions = 18,
  kCreateTopics = 19,
  kDeleteTopics = 20,
  kInitProducerId = 22,
  kDescribeConfigs = 32,
  kSaslAuthenticate = 36,
  kCreatePartitions = 37,
  kDeleteGroups = 42,
};

struct VersionRange {
  ApiKey key;
  int16_t min;
  int16_t max;
  bool operator==(const VersionRange&) const = default;
};

// The table rdmq advertises in ApiVersions, in api-key order (docs/kafka-protocol.md).
std::span<const VersionRange> SupportedApis() noexcept;
// The range for one api, or nullptr when rdmq does not implement it.
const VersionRange* FindApi(ApiKey key) noexcept;
// True when rdmq decodes requests of this api at this version.
bool Supported(ApiKey key, int16_t version) noexcept;

// True when Kafka defines this api at this version as flexible (request header v2 with tagged
// fields, compact types in the body). Known for every api Kafka had by 2.8, whether rdmq
// supports it or not, so a header can be parsed past its client id even for a version rdmq
// refuses; false for api keys it does not know. Of the supported versions only ApiVersions v3
// is flexible.
bool FlexibleRequest(ApiKey key, int16_t version) noexcept;
// The request header version: 2 when FlexibleRequest(), else 1.
int RequestHeaderVersion(ApiKey key, int16_t version) noexcept;
// The response header version: 1 (correlation id + tagged fields) for a flexible version, else
// 0 (correlation id only); always 0 for ApiVersions, whatever its version (Kafka's rule: a
// client must be able to read the answer before it knows what the broker supports).
int ResponseHeaderVersion(ApiKey key, int16_t version) noexcept;

// Kafka's name of the api ("Produce", "ApiVersions"); names are known for keys 0-51, others
// give "Unknown".
std::string_view ApiName(ApiKey key) noexcept;

}  // namespace rdmq::kafka
