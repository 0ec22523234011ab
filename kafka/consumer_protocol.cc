// The consumer protocol's subscription and assignment blobs (consumer_protocol.h).
#include "rdmq/kafka/consumer_protocol.h"

#include <algorithm>
#include <string>

#include "kafka/codec_io.h"

namespace rdmq::kafka {
namespace {

template <class Io, class P>
void TopicPartitionsArray(Io& io, P& list, std::string_view field) {
  io.Array(list, field, 6, [&](auto& tp) {
    io.String(tp.topic, "topic_partitions.topic");
    io.Int32Array(tp.partitions, "topic_partitions.partitions");
  });
}

// v is the version to read or write the fields of (the blob's, capped at the newest known).
template <class Io, class M>
void SubscriptionBody(Io& io, int16_t v, M& m) {
  io.StringArray(m.topics, "subscription.topics");
  io.NullableBytes(m.user_data, "subscription.user_data");
  if (v >= 1) TopicPartitionsArray(io, m.owned_partitions, "subscription.owned_partitions");
  if (v >= 2) io.Int32(m.generation_id, "subscription.generation_id");
  if (v >= 3) io.NullableString(m.rack_id, "subscription.rack_id");
}

template <class Io, class M>
void AssignmentBody(Io& io, int16_t, M& m) {
  TopicPartitionsArray(io, m.assigned_partitions, "assignment.assigned_partitions");
  io.NullableBytes(m.user_data, "assignment.user_data");
}

template <class M, class Body>
Status DecodeBlob(ByteSpan blob, M* out, int16_t newest, std::string_view what, Body&& body) {
  *out = M{};
  Reader r(blob);
  const int16_t version = r.Int16("version");
  if (r.ok() && version < 0)
    r.Fail(KafkaErrc::kMalformed, "version", "negative version " + std::to_string(version));
  if (!r.ok()) return r.status().WithContext(what);
  out->version = version;
  internal::ReadIo io(r);
  body(io, std::min(version, newest), *out);
  if (!r.ok()) return r.status().WithContext(std::string(what) + " v" + std::to_string(version));
  return Status::Ok();
}

}  // namespace

Status DecodeConsumerSubscription(ByteSpan blob, ConsumerProtocolSubscription* out) {
  return DecodeBlob(
      blob, out, kConsumerSubscriptionVersion, "consumer protocol subscription",
      [](internal::ReadIo& io, int16_t v, ConsumerProtocolSubscription& m) { SubscriptionBody(io, v, m); });
}

Status DecodeConsumerAssignment(ByteSpan blob, ConsumerProtocolAssignment* out) {
  return DecodeBlob(
      blob, out, kConsumerAssignmentVersion, "consumer protocol assignment",
      [](internal::ReadIo& io, int16_t v, ConsumerProtocolAssignment& m) { AssignmentBody(io, v, m); });
}

void EncodeConsumerSubscription(Writer& w, const ConsumerProtocolSubscription& m) {
  w.Int16(m.version);
  internal::WriteIo io(w);
  SubscriptionBody(io, std::min(m.version, kConsumerSubscriptionVersion), m);
}

void EncodeConsumerAssignment(Writer& w, const ConsumerProtocolAssignment& m) {
  w.Int16(m.version);
  internal::WriteIo io(w);
  AssignmentBody(io, std::min(m.version, kConsumerAssignmentVersion), m);
}

}  // namespace rdmq::kafka
