#include "topic_table.h"

#include <algorithm>

#include "rdmq/common/clock.h"

namespace rdmq::broker::internal {

using protocol::WireError;

void TopicTable::Insert(Topic topic) {
  MutexLock lock(mu_);
  std::string name = topic.info.name;
  topics_[name] = std::move(topic);
}

void TopicTable::Extend(const metadata::TopicInfo& info, std::vector<std::shared_ptr<Partition>> added) {
  MutexLock lock(mu_);
  Topic& t = topics_[info.name];
  t.info = info;
  t.partitions.insert(t.partitions.end(), added.begin(), added.end());
}

std::optional<Topic> TopicTable::Get(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::shared_ptr<Partition>> TopicTable::Remove(const std::string& name) {
  MutexLock lock(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return {};
  std::vector<std::shared_ptr<Partition>> parts;
  for (auto& p : it->second.partitions) {
    if (p) parts.push_back(std::move(p));
  }
  topics_.erase(it);
  return parts;
}

std::vector<std::shared_ptr<Partition>> TopicTable::RemoveAll() {
  std::map<std::string, Topic> topics;
  {
    MutexLock lock(mu_);
    topics.swap(topics_);
  }
  std::vector<std::shared_ptr<Partition>> parts;
  for (auto& [name, t] : topics) {
    for (auto& p : t.partitions) {
      if (p) parts.push_back(std::move(p));
    }
  }
  return parts;
}

std::vector<std::shared_ptr<Partition>> TopicTable::AllPartitions() const {
  MutexLock lock(mu_);
  std::vector<std::shared_ptr<Partition>> parts;
  for (const auto& [name, t] : topics_) {
    for (const auto& p : t.partitions) {
      if (p) parts.push_back(p);
    }
  }
  return parts;
}

size_t TopicTable::topic_count() const {
  MutexLock lock(mu_);
  return topics_.size();
}

size_t TopicTable::partition_count() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const auto& [name, t] : topics_) {
    for (const auto& p : t.partitions) n += p ? 1 : 0;
  }
  return n;
}

Result<std::shared_ptr<Partition>> TopicTable::Find(const std::string& topic, PartitionId partition) const {
  UniqueLock lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) {
    lock.Unlock();
    if (cluster_has_ && cluster_has_(topic)) {
      return Status(WireError::kNotLeader, "this broker holds no replica of " + topic + "-" +
                                               std::to_string(partition.value()) +
                                               " (DescribeTopic says which broker leads it)");
    }
    return Status(WireError::kUnknownTopic, "unknown topic '" + topic + "'");
  }
  const auto& parts = it->second.partitions;
  if (partition.value() < 0 || static_cast<size_t>(partition.value()) >= parts.size()) {
    return Status(WireError::kUnknownPartition, "topic '" + topic + "' has " + std::to_string(parts.size()) +
                                                    " partitions; there is no partition " +
                                                    std::to_string(partition.value()));
  }
  const std::shared_ptr<Partition>& p = parts[static_cast<size_t>(partition.value())];
  if (!p) {
    return Status(WireError::kNotLeader, "this broker holds no replica of " + topic + "-" +
                                             std::to_string(partition.value()) +
                                             " (DescribeTopic says which broker leads it)");
  }
  if (!p->serving()) {
    const int32_t leader = p->leader();
    return Status(WireError::kNotLeader,
                  "this broker does not lead " + p->where() +
                      (leader >= 0 ? " (broker " + std::to_string(leader) + " does)" : " (no leader now)"));
  }
  return p;
}

std::shared_ptr<Partition> TopicTable::FindReplica(const std::string& topic, PartitionId partition) const {
  MutexLock lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end() || partition.value() < 0 ||
      static_cast<size_t>(partition.value()) >= it->second.partitions.size()) {
    return nullptr;
  }
  return it->second.partitions[static_cast<size_t>(partition.value())];
}

void TopicTable::Place(const metadata::TopicInfo& info, PartitionId index, std::shared_ptr<Partition> p) {
  MutexLock lock(mu_);
  Topic& t = topics_[info.name];
  t.info = info;
  const auto count = static_cast<size_t>(std::max(info.config.partitions, index.value() + 1));
  if (t.partitions.size() < count) t.partitions.resize(count);
  t.partitions[static_cast<size_t>(index.value())] = std::move(p);
}

std::shared_ptr<Partition> TopicTable::Take(const std::string& topic, PartitionId index) {
  MutexLock lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end() || index.value() < 0 ||
      static_cast<size_t>(index.value()) >= it->second.partitions.size()) {
    return nullptr;
  }
  std::shared_ptr<Partition> p = std::move(it->second.partitions[static_cast<size_t>(index.value())]);
  if (std::none_of(it->second.partitions.begin(), it->second.partitions.end(),
                   [](const auto& x) { return x; })) {
    topics_.erase(it);
  }
  return p;
}

std::vector<std::string> TopicTable::TopicNames() const {
  MutexLock lock(mu_);
  std::vector<std::string> out;
  out.reserve(topics_.size());
  for (const auto& [name, t] : topics_) out.push_back(name);
  return out;
}

void TopicTable::Close(Partition& p, bool remove_files, std::optional<WireError> why) {
  MutexLock lock(p.mu);
  if (p.deleted()) return;
  for (const auto& l : p.Leases()) {
    leases_.EndLocked(p, l, why.value_or(remove_files ? WireError::kUnknownTopic : WireError::kUnavailable),
                      true);
  }
  p.CloseLog();
  // Wake consumers sleeping on the slot: they see the closed flag.
  publisher_.Publish(p);
  const bool keep = remove_files && !stopping_.load();
  Buried b = p.MarkDeleted(keep);
  if (keep) {
    b.drop_after_ns = MonoNanos() + kRetiredGraceNs;
    MutexLock g(graveyard_mu_);
    graveyard_.push_back(std::move(b));
  }
  if (remove_files) p.RemoveFiles();
}

void TopicTable::EndLeases(Partition& p, WireError why) {
  MutexLock lock(p.mu);
  if (p.deleted()) return;
  for (const auto& l : p.Leases()) leases_.EndLocked(p, l, why, true);
}

void TopicTable::DropBuried(uint64_t now_ns) {
  std::vector<Buried> drop;  // deregistered outside the lock
  MutexLock g(graveyard_mu_);
  for (auto it = graveyard_.begin(); it != graveyard_.end();) {
    if (it->drop_after_ns <= now_ns) {
      drop.push_back(std::move(*it));
      it = graveyard_.erase(it);
    } else {
      ++it;
    }
  }
}

void TopicTable::ClearBuried() {
  MutexLock g(graveyard_mu_);
  graveyard_.clear();
}

}  // namespace rdmq::broker::internal
