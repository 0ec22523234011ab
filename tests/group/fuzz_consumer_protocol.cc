// Kafka consumer-protocol subscriptions and assignments from arbitrary bytes: decoding never
// reads out of bounds, and what decodes re-encodes to bytes that decode to the same fields.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "rdmq/group/consumer_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rdmq::group;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto s = ParseConsumerSubscription(bytes); s.ok()) {
    const int16_t v = std::min(s->version, kConsumerProtocolMaxVersion);
    auto again = ParseConsumerSubscription(EncodeConsumerSubscription(*s, v));
    if (!again.ok() || again->topics != s->topics || again->user_data != s->user_data ||
        again->owned != s->owned || again->generation_id != s->generation_id ||
        again->rack_id != s->rack_id) {
      std::abort();
    }
  }
  if (auto a = ParseConsumerAssignment(bytes); a.ok()) {
    auto again = ParseConsumerAssignment(EncodeConsumerAssignment(*a, 0));
    if (!again.ok() || again->partitions != a->partitions || again->user_data != a->user_data) std::abort();
  }
  return 0;
}
