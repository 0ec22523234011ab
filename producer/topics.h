// The topics a producer has sent to and their partitions: looked up without a lock on every Send
// (an immutable map published through an atomic pointer), described by the broker and added
// under a lock the first time.
//
// Threading: thread-safe. TopicState and PState live as long as the Topics.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "producer/partition.h"
#include "rdmq/client/connection.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/producer/producer.h"

namespace rdmq::producer {

struct TopicState {
  std::string name;
  int32_t partitions = 0;
  uint32_t max_message_bytes = 0;  // the topic's max.message.bytes: the largest batch
  std::vector<PState*> parts;
  std::atomic<int32_t> sticky{-1};  // the partition keyless records go to now
};

class Topics {
 public:
  Topics(PartitionMode mode, std::chrono::nanoseconds delivery_timeout)
      : mode_(mode), delivery_timeout_(delivery_timeout) {}
  ~Topics();
  Topics(const Topics&) = delete;
  Topics& operator=(const Topics&) = delete;

  // Describes topics through `conn`; `max_message_bytes` is the broker's, for topics that do
  // not set their own.
  void Init(client::Connection* conn, uint32_t max_message_bytes);

  // The topic, described by the broker the first time.
  Result<TopicState*> Get(std::string_view name) {
    if (TopicState* t = Find(name)) return t;
    return Describe(name);
  }

  // The topic if it was described here before; nullptr otherwise.
  TopicState* Find(std::string_view name) const {
    if (const Map* m = map_.load(std::memory_order_acquire)) {
      auto it = m->find(name);
      if (it != m->end()) return it->second;
    }
    return nullptr;
  }

  // Every partition so far (the table only grows).
  std::vector<PState*> Partitions() const EXCLUDES(mu_);
  size_t partition_count() const EXCLUDES(mu_);
  PState* partition(size_t i) const EXCLUDES(mu_);

 private:
  using Map = std::unordered_map<std::string_view, TopicState*>;
  Result<TopicState*> Describe(std::string_view name) EXCLUDES(mu_);

  const PartitionMode mode_;
  const std::chrono::nanoseconds delivery_timeout_;
  client::Connection* conn_ = nullptr;
  uint32_t max_message_bytes_ = 0;
  mutable Mutex mu_;  // creation only; lookups go through the snapshot
  std::list<TopicState> topics_ GUARDED_BY(mu_);
  std::list<PState> part_store_ GUARDED_BY(mu_);
  std::vector<PState*> parts_ GUARDED_BY(mu_);
  std::atomic<const Map*> map_{nullptr};
  std::vector<std::unique_ptr<const Map>> old_maps_ GUARDED_BY(mu_);  // still read by lookups
};

}  // namespace rdmq::producer
