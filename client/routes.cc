#include "rdmq/client/routes.h"

#include "rdmq/protocol/messages.h"

namespace rdmq::client {

void Routes::SetBrokers(std::vector<BrokerAddress> live) {
  MutexLock lock(mu_);
  brokers_.clear();
  for (auto& b : live) brokers_[b.id] = std::move(b.control);
}

void Routes::SetTopic(const std::string& topic, std::vector<PartitionRoute> partitions) {
  MutexLock lock(mu_);
  TopicRoutes& t = topics_[topic];
  if (t.partitions.size() != partitions.size()) t.sticky = -1;
  t.partitions = std::move(partitions);
}

std::vector<int32_t> Routes::Brokers() const {
  MutexLock lock(mu_);
  std::vector<int32_t> out;
  for (const auto& [id, address] : brokers_) out.push_back(id);
  return out;
}

std::optional<std::vector<PartitionRoute>> Routes::Partitions(std::string_view topic) const {
  MutexLock lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) return std::nullopt;
  return it->second.partitions;
}

std::optional<int32_t> Routes::PartitionCount(std::string_view topic) const {
  MutexLock lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) return std::nullopt;
  return static_cast<int32_t>(it->second.partitions.size());
}

Result<int32_t> Routes::BrokerOf(std::string_view topic, int32_t partition) const {
  MutexLock lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end())
    return Status(Errc::kNotFound, "topic '" + std::string(topic) + "' is not routed yet");
  return BrokerOfLocked(topic, it->second.partitions, partition);
}

Result<int32_t> Routes::BrokerOfLocked(std::string_view topic, const std::vector<PartitionRoute>& parts,
                                       int32_t partition) const {
  if (partition < 0 || static_cast<size_t>(partition) >= parts.size()) {
    return Status(protocol::WireError::kUnknownPartition,
                  "topic '" + std::string(topic) + "' has " + std::to_string(parts.size()) +
                      " partitions; there is no partition " + std::to_string(partition));
  }
  if (const int32_t to = parts[static_cast<size_t>(partition)].destination(); to >= 0) return to;
  return Status(protocol::WireError::kNotLeader,
                std::string(topic) + "-" + std::to_string(partition) + " has neither a leader nor replicas");
}

Result<std::string> Routes::AddressOf(int32_t broker) const {
  MutexLock lock(mu_);
  auto it = brokers_.find(broker);
  if (it == brokers_.end()) {
    return Status(Errc::kUnavailable, "broker " + std::to_string(broker) + " is not live in the cluster");
  }
  return it->second;
}

Result<Routes::Target> Routes::Resolve(std::string_view topic, int32_t partition,
                                       std::optional<uint32_t> key_hash, size_t bytes, uint32_t random) {
  MutexLock lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end())
    return Status(Errc::kNotFound, "topic '" + std::string(topic) + "' is not routed yet");
  TopicRoutes& t = it->second;
  if (partition < 0 && !t.partitions.empty()) {
    partition = key_hash ? static_cast<int32_t>(*key_hash % t.partitions.size()) : Sticky(t, bytes, random);
  }
  RDMQ_ASSIGN_OR_RETURN(const int32_t broker, BrokerOfLocked(topic, t.partitions, partition));
  return Target{partition, broker};
}

int32_t Routes::Sticky(TopicRoutes& t, size_t bytes, uint32_t random) const {
  const auto n = static_cast<int32_t>(t.partitions.size());
  const auto led = [&](int32_t p) { return t.partitions[static_cast<size_t>(p)].leader >= 0; };
  const bool have = t.sticky >= 0 && t.sticky < n;
  if (have && t.sticky_bytes < batch_size_ && led(t.sticky)) {
    t.sticky_bytes += bytes;
    return t.sticky;
  }
  // Time for another: one with a leader (any, when none has one), not the same when there is a
  // choice.
  std::vector<int32_t> candidates;
  for (int32_t p = 0; p < n; ++p) {
    if (led(p)) candidates.push_back(p);
  }
  if (candidates.empty()) {
    for (int32_t p = 0; p < n; ++p) candidates.push_back(p);
  }
  size_t pick = random % candidates.size();
  if (have && candidates.size() > 1 && candidates[pick] == t.sticky) pick = (pick + 1) % candidates.size();
  t.sticky = candidates[pick];
  t.sticky_bytes = bytes;
  return t.sticky;
}

}  // namespace rdmq::client
