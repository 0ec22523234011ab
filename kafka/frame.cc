// Frame size prefixes and request/response headers (frame.h).
#include "rdmq/kafka/frame.h"

#include <string>

#include "rdmq/common/coding.h"

namespace rdmq::kafka {

Result<int32_t> FrameLength(std::span<const std::byte, 4> prefix, int32_t max_frame_bytes) {
  const auto n = coding::LoadBE<int32_t>(prefix.data());
  if (n <= 0) return Status(KafkaErrc::kBadFrameSize, "frame size " + std::to_string(n));
  if (n > max_frame_bytes) {
    return Status(KafkaErrc::kFrameTooLarge, "frame size " + std::to_string(n) + " above the limit of " +
                                                 std::to_string(max_frame_bytes));
  }
  return n;
}

Result<RequestHeader> DecodeRequestHeader(Reader& r) {
  RequestHeader h;
  h.api_key = r.Int16("header.api_key");
  h.api_version = r.Int16("header.api_version");
  h.correlation_id = r.Int32("header.correlation_id");
  h.client_id = r.NullableString("header.client_id");
  if (r.ok() && FlexibleRequest(h.key(), h.api_version)) r.SkipTaggedFields("header.tagged_fields");
  if (!r.ok()) {
    const Status& s = r.status();
    if (r.offset() >= 8) {
      return s.WithContext("request header of " + std::string(ApiName(h.key())) + " v" +
                           std::to_string(h.api_version) + " correlation id " +
                           std::to_string(h.correlation_id));
    }
    return s;
  }
  return h;
}

Status CheckSupported(const RequestHeader& h) {
  if (Supported(h.key(), h.api_version)) return Status::Ok();
  std::string context = "api key " + std::to_string(h.api_key) + " (" + std::string(ApiName(h.key())) +
                        ") v" + std::to_string(h.api_version) + ", correlation id " +
                        std::to_string(h.correlation_id);
  const VersionRange* range = FindApi(h.key());
  if (range == nullptr) return Status(KafkaErrc::kUnknownApi, std::move(context));
  context += ": rdmq supports v" + std::to_string(range->min) + "-" + std::to_string(range->max);
  return Status(KafkaErrc::kUnsupportedVersion, std::move(context));
}

void EncodeResponseHeader(Writer& w, int32_t correlation_id, ApiKey key, int16_t version) {
  w.Int32(correlation_id);
  if (ResponseHeaderVersion(key, version) >= 1) w.EmptyTaggedFields();
}

void EncodeRequestHeader(Writer& w, const RequestHeader& h) {
  w.Int16(h.api_key);
  w.Int16(h.api_version);
  w.Int32(h.correlation_id);
  w.NullableString(h.client_id);
  if (FlexibleRequest(h.key(), h.api_version)) w.EmptyTaggedFields();
}

}  // namespace rdmq::kafka
