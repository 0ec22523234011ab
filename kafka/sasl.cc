// SaslHandshake and SaslAuthenticate bodies (sasl.h).
#include "rdmq/kafka/sasl.h"

#include "kafka/codec_io.h"

namespace rdmq::kafka {
namespace {

template <class Io, class M>
void SaslHandshakeRequestBody(Io& io, int16_t, M& m) {
  io.String(m.mechanism, "mechanism");
}

template <class Io, class M>
void SaslHandshakeResponseBody(Io& io, int16_t, M& m) {
  io.Error(m.error_code, "error_code");
  io.StringArray(m.mechanisms, "mechanisms");
}

template <class Io, class M>
void SaslAuthenticateRequestBody(Io& io, int16_t, M& m) {
  io.Bytes(m.auth_bytes, "auth_bytes");
}

template <class Io, class M>
void SaslAuthenticateResponseBody(Io& io, int16_t v, M& m) {
  io.Error(m.error_code, "error_code");
  io.NullableString(m.error_message, "error_message");
  io.Bytes(m.auth_bytes, "auth_bytes");
  if (v >= 1) io.Int64(m.session_lifetime_ms, "session_lifetime_ms");
}

}  // namespace

RDMQ_KAFKA_MESSAGE_CODEC(SaslHandshakeRequest, ApiKey::kSaslHandshake, SaslHandshakeRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(SaslHandshakeResponse, ApiKey::kSaslHandshake, SaslHandshakeResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(SaslAuthenticateRequest, ApiKey::kSaslAuthenticate, SaslAuthenticateRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(SaslAuthenticateResponse, ApiKey::kSaslAuthenticate, SaslAuthenticateResponseBody)

}  // namespace rdmq::kafka
