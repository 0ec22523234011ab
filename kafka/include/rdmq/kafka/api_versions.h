// ApiVersions (api 18, v0-3), the first request of every client, and the reply rdmq builds from
// SupportedApis() (docs/kafka-protocol.md, "ApiVersions"). v3 is the only flexible version rdmq
// speaks: compact strings and arrays and tagged fields in the body, request header v2; the
// response header is v0 for every version. Conventions: produce_fetch.h.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/kafka/api.h"
#include "rdmq/kafka/errors.h"
#include "rdmq/kafka/wire.h"

namespace rdmq::kafka {

struct ApiVersionsRequest {
  std::string_view client_software_name;     // v3+ (e.g. "librdkafka")
  std::string_view client_software_version;  // v3+
};

struct ApiVersionsResponse {
  ErrorCode error_code = ErrorCode::kNone;
  std::vector<VersionRange> api_keys;
  int32_t throttle_time_ms = 0;  // v1+
};

Status Decode(Reader& r, int16_t version, ApiVersionsRequest* out);
void Encode(Writer& w, int16_t version, const ApiVersionsRequest& m);
Status Decode(Reader& r, int16_t version, ApiVersionsResponse* out);
void Encode(Writer& w, int16_t version, const ApiVersionsResponse& m);

// What to answer an ApiVersions request of `request_version` with: the response and the version
// to encode it in. A supported version (0-3) is answered in that version with error NONE; a newer
// one (> 3, e.g. a client that starts at v4) in v0 with UNSUPPORTED_VERSION, and still with the
// api table, so the client retries at the highest version both support (Kafka's KIP-511 rule).
// Negative versions are answered like newer ones. The response header is v0 either way.
struct ApiVersionsAnswer {
  int16_t version = 0;
  ApiVersionsResponse response;
};
ApiVersionsAnswer AnswerApiVersions(int16_t request_version);

// The whole ApiVersions reply frame: size prefix, response header v0, body.
void WriteApiVersionsReply(Writer& w, int32_t correlation_id, int16_t request_version);

}  // namespace rdmq::kafka
