// SASL on the Kafka listener: SaslHandshake (api 17, v0-1) picks the mechanism; after v1,
// SaslAuthenticate (api 36, v0-1) carries each token of the exchange; after v0 the client sends
// the tokens as bare size-prefixed frames (docs/kafka-protocol.md, "SaslHandshake").
// Conventions: produce_fetch.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/kafka/errors.h"
#include "rdmq/kafka/wire.h"

namespace rdmq::kafka {

// ---- SaslHandshake ------------------------------------------------------------------------------

struct SaslHandshakeRequest {
  std::string_view mechanism;  // "SCRAM-SHA-256", "PLAIN", ...
};
struct SaslHandshakeResponse {
  ErrorCode error_code = ErrorCode::kNone;
  std::vector<std::string> mechanisms;  // those the broker enables
};

Status Decode(Reader& r, int16_t version, SaslHandshakeRequest* out);
void Encode(Writer& w, int16_t version, const SaslHandshakeRequest& m);
Status Decode(Reader& r, int16_t version, SaslHandshakeResponse* out);
void Encode(Writer& w, int16_t version, const SaslHandshakeResponse& m);

// ---- SaslAuthenticate ---------------------------------------------------------------------------

struct SaslAuthenticateRequest {
  ByteSpan auth_bytes;  // the client's next SASL token
};
struct SaslAuthenticateResponse {
  ErrorCode error_code = ErrorCode::kNone;
  std::optional<std::string> error_message;
  ByteSpan auth_bytes;              // the server's token (empty when none)
  int64_t session_lifetime_ms = 0;  // v1+; 0: the session does not expire
};

Status Decode(Reader& r, int16_t version, SaslAuthenticateRequest* out);
void Encode(Writer& w, int16_t version, const SaslAuthenticateRequest& m);
Status Decode(Reader& r, int16_t version, SaslAuthenticateResponse* out);
void Encode(Writer& w, int16_t version, const SaslAuthenticateResponse& m);

}  // namespace rdmq::kafka
