// ApiVersions bodies and the reply built from the supported-API table (api_versions.h).
#include "rdmq/kafka/api_versions.h"

#include <cassert>
#include <type_traits>

#include "kafka/codec_io.h"
#include "rdmq/kafka/frame.h"

namespace rdmq::kafka {
namespace {

constexpr int16_t kFirstFlexible = 3;

template <class Io, class M>
void ApiVersionsRequestBody(Io& io, int16_t v, M& m) {
  if (v >= kFirstFlexible) {
    io.CompactString(m.client_software_name, "client_software_name");
    io.CompactString(m.client_software_version, "client_software_version");
    io.TaggedFields("tagged_fields");
  }
}

template <class Io, class M>
void ApiVersionsResponseBody(Io& io, int16_t v, M& m) {
  io.Error(m.error_code, "error_code");
  auto key = [&](auto& k) {
    // VersionRange holds the key as an ApiKey; on the wire it is an int16.
    auto raw = static_cast<int16_t>(k.key);
    io.Int16(raw, "api_key.api_key");
    if constexpr (!std::is_const_v<std::remove_reference_t<decltype(k)>>) k.key = static_cast<ApiKey>(raw);
    io.Int16(k.min, "api_key.min_version");
    io.Int16(k.max, "api_key.max_version");
    if (v >= kFirstFlexible) io.TaggedFields("api_key.tagged_fields");
  };
  if (v >= kFirstFlexible) {
    io.CompactArray(m.api_keys, "api_keys", 7, key);
  } else {
    io.Array(m.api_keys, "api_keys", 6, key);
  }
  if (v >= 1) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  if (v >= kFirstFlexible) io.TaggedFields("tagged_fields");
}

}  // namespace

RDMQ_KAFKA_MESSAGE_CODEC(ApiVersionsRequest, ApiKey::kApiVersions, ApiVersionsRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(ApiVersionsResponse, ApiKey::kApiVersions, ApiVersionsResponseBody)

ApiVersionsAnswer AnswerApiVersions(int16_t request_version) {
  ApiVersionsAnswer a;
  const auto apis = SupportedApis();
  a.response.api_keys.assign(apis.begin(), apis.end());
  if (Supported(ApiKey::kApiVersions, request_version)) {
    a.version = request_version;
  } else {
    a.version = 0;
    a.response.error_code = ErrorCode::kUnsupportedVersion;
  }
  return a;
}

void WriteApiVersionsReply(Writer& w, int32_t correlation_id, int16_t request_version) {
  const ApiVersionsAnswer a = AnswerApiVersions(request_version);
  w.ReserveSizePrefix();
  EncodeResponseHeader(w, correlation_id, ApiKey::kApiVersions, a.version);
  Encode(w, a.version, a.response);
  const Status s = w.FinishSizePrefix();
  assert(s.ok());  // a few hundred bytes
  (void)s;
}

}  // namespace rdmq::kafka
