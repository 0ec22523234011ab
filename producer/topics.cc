#include "producer/topics.h"

#include <charconv>

#include "rdmq/protocol/messages.h"

namespace rdmq::producer {

Topics::~Topics() { delete map_.load(); }

void Topics::Init(client::Connection* conn, uint32_t max_message_bytes) {
  conn_ = conn;
  max_message_bytes_ = max_message_bytes;
  map_.store(new Map(), std::memory_order_release);
}

Result<TopicState*> Topics::Describe(std::string_view name) {
  MutexLock lock(mu_);
  const Map* cur = map_.load(std::memory_order_acquire);
  if (auto it = cur->find(name); it != cur->end()) return it->second;
  protocol::TopicNameRequest req{std::string(name)};
  RDMQ_ASSIGN_OR_RETURN(auto d,
                        (conn_->Call<protocol::DescribeTopicResponse>(protocol::Api::kDescribeTopic, req)));
  int32_t partitions = 0;
  uint32_t max_message = max_message_bytes_;
  for (const auto& e : d.topic.configs) {
    if (e.key == "partitions") std::from_chars(e.value.data(), e.value.data() + e.value.size(), partitions);
    if (e.key == "max.message.bytes")
      std::from_chars(e.value.data(), e.value.data() + e.value.size(), max_message);
  }
  if (partitions <= 0) partitions = static_cast<int32_t>(d.partitions.size());
  TopicState& t = topics_.emplace_back();
  t.name = std::string(name);
  t.partitions = partitions;
  t.max_message_bytes = max_message;
  for (int32_t i = 0; i < partitions; ++i) {
    PState& ps = part_store_.emplace_back(static_cast<uint32_t>(parts_.size()), &t, PartitionId(i), mode_,
                                          delivery_timeout_);
    parts_.push_back(&ps);
    t.parts.push_back(&ps);
  }
  auto next = std::make_unique<Map>(*cur);
  (*next)[t.name] = &t;
  old_maps_.emplace_back(cur);
  map_.store(next.release(), std::memory_order_release);
  return &t;
}

std::vector<PState*> Topics::Partitions() const {
  MutexLock lock(mu_);
  return parts_;
}

size_t Topics::partition_count() const {
  MutexLock lock(mu_);
  return parts_.size();
}

PState* Topics::partition(size_t i) const {
  MutexLock lock(mu_);
  return parts_[i];
}

}  // namespace rdmq::producer
