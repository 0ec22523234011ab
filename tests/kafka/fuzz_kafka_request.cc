// Decodes arbitrary bytes as a Kafka request frame body: the header, then the body of whatever
// api and version it names (every supported one, as a request and as a response), re-encoding
// what decodes and checking the encoding (ReEncode). Whatever carries consumer-protocol blobs
// (JoinGroup metadata, SyncGroup assignments) has them decoded too, and the input itself is tried
// as a subscription, an assignment and a frame-size prefix.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "rdmq/group/consumer_protocol.h"
#include "rdmq/kafka/frame.h"
#include "rdmq/kafka/messages.h"
#include "tests/kafka/kafka_test_util.h"

namespace {

using namespace rdmq::kafka;

std::string_view View(ByteSpan b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

void Blobs(const JoinGroupRequest& m) {
  for (const auto& p : m.protocols) (void)rdmq::group::ParseConsumerSubscription(View(p.metadata));
}
void Blobs(const SyncGroupRequest& m) {
  for (const auto& a : m.assignments) (void)rdmq::group::ParseConsumerAssignment(View(a.assignment));
}
template <class M>
void Blobs(const M&) {}

// Re-encodes a decoded message and checks the encoding: it decodes again to the same bytes, and
// for classic (non-flexible) versions it is as long as what was consumed. Flexible versions may
// shrink: unknown tagged fields are dropped and varints re-encoded minimally.
template <class M>
void ReEncode(ApiKey key, int16_t version, const M& m, size_t consumed) {
  Writer w;
  Encode(w, version, m);
  const auto bytes = w.Flatten();
  if (!FlexibleRequest(key, version) && bytes.size() != consumed) std::abort();
  Reader r(bytes);
  M again;
  if (!Decode(r, version, &again).ok()) std::abort();
  Writer w2;
  Encode(w2, version, again);
  if (w2.Flatten() != bytes) std::abort();
}

template <class Req, class Resp>
void Body(ApiKey key, ByteSpan body, int16_t version) {
  {
    Reader r(body);
    Req m;
    if (Decode(r, version, &m).ok()) {
      Blobs(m);
      ReEncode(key, version, m, body.size());
    }
  }
  Reader r(body);
  Resp m;
  if (Decode(r, version, &m).ok()) ReEncode(key, version, m, body.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ByteSpan in(reinterpret_cast<const std::byte*>(data), size);
  if (size >= 4) (void)FrameLength(in.first<4>(), kDefaultMaxFrameBytes);
  (void)rdmq::group::ParseConsumerSubscription(View(in));
  (void)rdmq::group::ParseConsumerAssignment(View(in));

  Reader r(in);
  const auto header = DecodeRequestHeader(r);
  if (!header.ok()) return 0;
  const ByteSpan body = r.rest();
  const int16_t v = header->api_version;
  switch (header->key()) {
#define RDMQ_KAFKA_FUZZ_CASE_(key, Req, Resp) \
  case ApiKey::key:                           \
    Body<Req, Resp>(ApiKey::key, body, v);    \
    break;
    RDMQ_KAFKA_TEST_APIS(RDMQ_KAFKA_FUZZ_CASE_)
#undef RDMQ_KAFKA_FUZZ_CASE_
    default:
      break;
  }
  return 0;
}
