// Kafka's ConsumerProtocolSubscription and ConsumerProtocolAssignment (Kafka's classic, non-
// flexible encoding: big-endian integers, int16-length strings, int32-length bytes and arrays).
#include "rdmq/group/consumer_protocol.h"

#include "rdmq/common/coding.h"
#include "rdmq/group/errors.h"

namespace rdmq::group {

namespace {

constexpr size_t kMaxTopicName = 249;  // Kafka's longest legal topic name

class Parser {
 public:
  explicit Parser(std::string_view bytes) : r_(bytes.data(), bytes.size()) {}

  Status Fail(const std::string& field) const { return Status(GroupErrc::kMalformedConsumerProtocol, field); }
  size_t remaining() const { return r_.remaining(); }

  Result<int16_t> Int16(const char* field) {
    const auto v = r_.BE<int16_t>();
    if (!r_.ok()) return Fail(std::string(field) + ": truncated");
    return v;
  }
  Result<int32_t> Int32(const char* field) {
    const auto v = r_.BE<int32_t>();
    if (!r_.ok()) return Fail(std::string(field) + ": truncated");
    return v;
  }
  // A string (int16 length).
  Result<std::string> String(const char* field) {
    RDMQ_ASSIGN_OR_RETURN(const int16_t n, Int16(field));
    if (n < 0) return Fail(std::string(field) + ": length " + std::to_string(n));
    return Take(field, static_cast<size_t>(n));
  }
  // A nullable string: nullopt for null (length -1).
  Result<std::optional<std::string>> NullableString(const char* field) {
    RDMQ_ASSIGN_OR_RETURN(const int16_t n, Int16(field));
    if (n == -1) return std::optional<std::string>();
    if (n < 0) return Fail(std::string(field) + ": length " + std::to_string(n));
    RDMQ_ASSIGN_OR_RETURN(std::string v, Take(field, static_cast<size_t>(n)));
    return std::optional<std::string>(std::move(v));
  }
  Result<std::string> Take(const char* field, size_t n) {
    auto b = r_.Bytes(n);
    if (!r_.ok()) return Fail(std::string(field) + ": " + std::to_string(n) + " bytes, fewer left");
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  // Bytes (int32 length, -1 = null).
  Result<std::optional<std::string>> NullableBytes(const char* field) {
    RDMQ_ASSIGN_OR_RETURN(const int32_t n, Int32(field));
    if (n == -1) return std::optional<std::string>();
    if (n < 0 || static_cast<size_t>(n) > r_.remaining()) {
      return Fail(std::string(field) + ": length " + std::to_string(n) + ", " +
                  std::to_string(r_.remaining()) + " bytes left");
    }
    RDMQ_ASSIGN_OR_RETURN(std::string v, Take(field, static_cast<size_t>(n)));
    return std::optional<std::string>(std::move(v));
  }
  // An array count whose elements take at least `min_size` bytes each, so that a count the
  // input cannot hold is refused before anything is allocated.
  Result<size_t> Count(const char* field, size_t min_size) {
    RDMQ_ASSIGN_OR_RETURN(const int32_t n, Int32(field));
    if (n < 0 || static_cast<size_t>(n) > r_.remaining() / min_size) {
      return Fail(std::string(field) + ": count " + std::to_string(n) + " with " +
                  std::to_string(r_.remaining()) + " bytes left");
    }
    return static_cast<size_t>(n);
  }
  Result<int16_t> Version(const char* what) {
    RDMQ_ASSIGN_OR_RETURN(const int16_t v, Int16(what));
    if (v < 0) return Fail(std::string(what) + ": negative version " + std::to_string(v));
    return v;
  }
  // [{topic: string, partitions: [int32]}]
  Status TopicPartitions(const char* field, std::vector<TopicPartition>* out) {
    RDMQ_ASSIGN_OR_RETURN(const size_t topics, Count(field, 6));
    for (size_t i = 0; i < topics; ++i) {
      RDMQ_ASSIGN_OR_RETURN(std::string topic, String(field));
      // Every partition repeats its topic's name: a name longer than Kafka allows could make
      // the output far larger than the input.
      if (topic.size() > kMaxTopicName) {
        return Fail(std::string(field) + ": a topic name of " + std::to_string(topic.size()) + " bytes");
      }
      RDMQ_ASSIGN_OR_RETURN(const size_t parts, Count(field, 4));
      for (size_t j = 0; j < parts; ++j) {
        RDMQ_ASSIGN_OR_RETURN(const int32_t p, Int32(field));
        out->push_back({topic, p});
      }
    }
    return Status::Ok();
  }

 private:
  coding::Reader r_;
};

void PutString(coding::Writer& w, std::string_view s) {
  w.BE<int16_t>(static_cast<int16_t>(s.size()));
  w.Bytes(s);
}
void PutNullableString(coding::Writer& w, const std::optional<std::string>& s) {
  if (!s) {
    w.BE<int16_t>(-1);
    return;
  }
  PutString(w, *s);
}
void PutNullableBytes(coding::Writer& w, const std::optional<std::string>& b) {
  if (!b) {
    w.BE<int32_t>(-1);
    return;
  }
  w.BE<int32_t>(static_cast<int32_t>(b->size()));
  w.Bytes(*b);
}
void PutTopicPartitions(coding::Writer& w, const std::vector<TopicPartition>& tps) {
  std::vector<std::pair<std::string, std::vector<int32_t>>> grouped;
  for (const auto& tp : tps) {
    if (grouped.empty() || grouped.back().first != tp.topic) grouped.push_back({tp.topic, {}});
    grouped.back().second.push_back(tp.partition);
  }
  w.BE<int32_t>(static_cast<int32_t>(grouped.size()));
  for (const auto& [topic, parts] : grouped) {
    PutString(w, topic);
    w.BE<int32_t>(static_cast<int32_t>(parts.size()));
    for (int32_t p : parts) w.BE<int32_t>(p);
  }
}

}  // namespace

Result<ConsumerSubscription> ParseConsumerSubscription(std::string_view bytes) {
  Parser p(bytes);
  ConsumerSubscription s;
  RDMQ_ASSIGN_OR_RETURN(s.version, p.Version("subscription version"));
  const int16_t v = std::min(s.version, kConsumerProtocolMaxVersion);
  RDMQ_ASSIGN_OR_RETURN(const size_t topics, p.Count("subscription topics", 2));
  s.topics.reserve(topics);
  for (size_t i = 0; i < topics; ++i) {
    RDMQ_ASSIGN_OR_RETURN(std::string t, p.String("subscription topics"));
    s.topics.push_back(std::move(t));
  }
  RDMQ_ASSIGN_OR_RETURN(s.user_data, p.NullableBytes("subscription user_data"));
  if (v >= 1) RDMQ_RETURN_IF_ERROR(p.TopicPartitions("subscription owned_partitions", &s.owned));
  if (v >= 2) {
    RDMQ_ASSIGN_OR_RETURN(s.generation_id, p.Int32("subscription generation_id"));
  }
  if (v >= 3) {
    RDMQ_ASSIGN_OR_RETURN(s.rack_id, p.NullableString("subscription rack_id"));
  }
  return s;
}

Result<ConsumerAssignment> ParseConsumerAssignment(std::string_view bytes) {
  Parser p(bytes);
  ConsumerAssignment a;
  RDMQ_ASSIGN_OR_RETURN(a.version, p.Version("assignment version"));
  RDMQ_RETURN_IF_ERROR(p.TopicPartitions("assignment assigned_partitions", &a.partitions));
  RDMQ_ASSIGN_OR_RETURN(a.user_data, p.NullableBytes("assignment user_data"));
  return a;
}

std::string EncodeConsumerSubscription(const ConsumerSubscription& s, int16_t version) {
  std::string out;
  coding::Writer w(&out);
  w.BE<int16_t>(version);
  w.BE<int32_t>(static_cast<int32_t>(s.topics.size()));
  for (const auto& t : s.topics) PutString(w, t);
  PutNullableBytes(w, s.user_data);
  if (version >= 1) PutTopicPartitions(w, s.owned);
  if (version >= 2) w.BE<int32_t>(s.generation_id);
  if (version >= 3) PutNullableString(w, s.rack_id);
  return out;
}

std::string EncodeConsumerAssignment(const ConsumerAssignment& a, int16_t version) {
  std::string out;
  coding::Writer w(&out);
  w.BE<int16_t>(version);
  PutTopicPartitions(w, a.partitions);
  PutNullableBytes(w, a.user_data);
  return out;
}

}  // namespace rdmq::group
