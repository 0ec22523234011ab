// Kafka framing (docs/kafka-protocol.md, "Framing" and "Headers"): every request and response is
// a 4-byte big-endian size followed by that many bytes; a request starts with a request header
// (v1, or v2 with tagged fields for flexible versions), a response with a response header (v0:
// the correlation id; v1: plus tagged fields; ApiVersions is always answered with v0).
//
// A listener reads 4 bytes, checks them with FrameLength(), reads the frame, wraps it in a Reader,
// calls DecodeRequestHeader() and then the Decode() of messages.h for the api it names (when
// Supported()). It answers with a Writer: ReserveSizePrefix(), EncodeResponseHeader(), the
// response's Encode(), FinishSizePrefix(), then a gather write of chunks().
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "rdmq/common/status.h"
#include "rdmq/kafka/api.h"
#include "rdmq/kafka/wire.h"

namespace rdmq::kafka {

// The default limit on a request frame (Kafka's socket.request.max.bytes).
inline constexpr int32_t kDefaultMaxFrameBytes = 100 << 20;

// The frame length a 4-byte size prefix announces. kBadFrameSize for zero or negative sizes,
// kFrameTooLarge above max_frame_bytes; the context names the value.
Result<int32_t> FrameLength(std::span<const std::byte, 4> prefix, int32_t max_frame_bytes);

struct RequestHeader {
  int16_t api_key = 0;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  // A view into the frame; null when the client sent a null client id.
  std::optional<std::string_view> client_id;

  ApiKey key() const noexcept { return static_cast<ApiKey>(api_key); }
};

// Reads a request header: api key, version, correlation id, client id, then (when the api and
// version are flexible, see FlexibleRequest()) the header's tagged fields, which are skipped.
// An api key rdmq does not implement, or a version it does not support, is NOT an error here:
// the header comes back so that the caller can answer (ApiVersions with UNSUPPORTED_VERSION) or
// log and close; check Supported(). Errors: the header's own bytes are truncated or malformed
// (an error after the correlation id still reports the id in the context).
Result<RequestHeader> DecodeRequestHeader(Reader& r);

// OK when rdmq implements the header's api at its version; otherwise kUnknownApi or
// kUnsupportedVersion, the context naming the api, version and correlation id (for the log line
// of a listener that closes the connection).
Status CheckSupported(const RequestHeader& h);

// Writes the response header that answers this api and version: the correlation id, plus an
// empty tagged-field section when ResponseHeaderVersion() is 1.
void EncodeResponseHeader(Writer& w, int32_t correlation_id, ApiKey key, int16_t version);

// Test and client helper: writes a request header of the version the api/version calls for.
void EncodeRequestHeader(Writer& w, const RequestHeader& h);

}  // namespace rdmq::kafka
