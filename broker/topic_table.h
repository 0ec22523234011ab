// TopicTable: the topics this broker serves and their open partitions; opening and closing
// partitions; the registrations of deleted partitions kept for a grace period (the graveyard).
//
// Threading: the table's lock is the outermost of the broker's (topics → partition → ...); it
// is never held while a partition's lock is taken, nor across file creation or fsync. Topic
// administration is serialised by the caller (the admin handlers' lock).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lease_manager.h"
#include "partition.h"
#include "publisher.h"
#include "rdmq/common/mutex.h"
#include "rdmq/metadata/store.h"

namespace rdmq::broker::internal {

struct Topic {
  metadata::TopicInfo info;
  // By index. In a cluster only the partitions this broker holds a replica of are open; the
  // others are null.
  std::vector<std::shared_ptr<Partition>> partitions;
};

class TopicTable {
 public:
  // `stopping` says the broker shuts down (closed partitions' registrations are then dropped
  // at once). OpenPartitions opens up to `open_threads` partitions at a time.
  TopicTable(PartitionOptions options, uint32_t open_threads, LeaseManager& leases, Publisher& publisher,
             const std::atomic<bool>& stopping)
      : options_(std::move(options)),
        open_threads_(open_threads == 0 ? 1 : open_threads),
        leases_(leases),
        publisher_(publisher),
        stopping_(stopping) {}

  // Opens (creates or recovers) one partition of `topic`; it is served once Insert or Extend
  // adds it.
  Result<std::shared_ptr<Partition>> OpenPartition(const metadata::TopicInfo& topic, PartitionId index,
                                                   Offset initial_offset = Offset(0)) const {
    return Partition::Open(topic, index, options_, initial_offset);
  }
  // Opens partitions [first, end) of `topic`, up to open_threads of them at a time (opening
  // waits on fsync and reads, so side by side it takes a fraction of the time); `opened` gets
  // them by index. On failure it opens no further partitions, closes those it opened, removes
  // the directories of those it created (as Partition::Open does for one, again once the others
  // gave back their files: a failure may be the open-file limit, and removing needs a
  // descriptor), empties `opened` and returns the error of the lowest index that failed.
  Status OpenPartitions(const metadata::TopicInfo& topic, int32_t first, int32_t end,
                        std::vector<std::shared_ptr<Partition>>* opened) EXCLUDES(graveyard_mu_);
  // The same over partitions of any topics (a start opens every topic's in one go, so that many
  // small topics open side by side too); `opened` follows the order of `which`.
  struct PartitionRef {
    const metadata::TopicInfo* topic;
    int32_t index;
  };
  Status OpenPartitions(const std::vector<PartitionRef>& which,
                        std::vector<std::shared_ptr<Partition>>* opened) EXCLUDES(graveyard_mu_);
  // Opens each of `which` on its own, up to open_threads at a time: a failure stops nothing and
  // undoes nothing (a cluster member opens the replicas it holds so, and logs those that fail).
  // The results follow the order of `which`.
  std::vector<Result<std::shared_ptr<Partition>>> OpenEach(const std::vector<PartitionRef>& which) const;
  void Insert(Topic topic) EXCLUDES(mu_);
  // A topic's new config and partitions (AlterTopic).
  void Extend(const metadata::TopicInfo& info, std::vector<std::shared_ptr<Partition>> added) EXCLUDES(mu_);
  // A copy of the topic's entry, if it is served.
  std::optional<Topic> Get(const std::string& name) const EXCLUDES(mu_);
  // Stops serving a topic (none: nothing); returns its partitions for the caller to close.
  std::vector<std::shared_ptr<Partition>> Remove(const std::string& name) EXCLUDES(mu_);
  std::vector<std::shared_ptr<Partition>> RemoveAll() EXCLUDES(mu_);
  std::vector<std::shared_ptr<Partition>> AllPartitions() const EXCLUDES(mu_);
  size_t topic_count() const EXCLUDES(mu_);
  size_t partition_count() const EXCLUDES(mu_);

  // The partition named by topic and index, to serve a client: kUnknownTopic, kUnknownPartition,
  // and in a cluster kNotLeader when this broker holds no replica of it or does not lead it.
  Result<std::shared_ptr<Partition>> Find(const std::string& topic, PartitionId partition) const
      EXCLUDES(mu_);
  // In a cluster: whether the cluster has `topic`, which this broker may hold nothing of (Find
  // then answers kNotLeader, not kUnknownTopic). Set once, before the broker serves.
  void SetClusterTopics(std::function<bool(const std::string& topic)> has) { cluster_has_ = std::move(has); }
  // The replica this broker holds, led here or not (null when it holds none).
  std::shared_ptr<Partition> FindReplica(const std::string& topic, PartitionId partition) const EXCLUDES(mu_);
  // In a cluster: serves `p` as partition `index` of `info` (a topic of `count` partitions), or
  // forgets it (returning it for the caller to close).
  void Place(const metadata::TopicInfo& info, PartitionId index, std::shared_ptr<Partition> p) EXCLUDES(mu_);
  std::shared_ptr<Partition> Take(const std::string& topic, PartitionId index) EXCLUDES(mu_);
  std::vector<std::string> TopicNames() const EXCLUDES(mu_);

  // The start of every request about a partition named by topic and index: the partition found,
  // locked, a deleted one refused (kUnknownTopic); then act(partition) under its lock.
  template <class Act>
  Status WithPartition(const std::string& topic, PartitionId partition, Act&& act) EXCLUDES(mu_) {
    RDMQ_ASSIGN_OR_RETURN(std::shared_ptr<Partition> pp, Find(topic, partition));
    Partition& p = *pp;
    MutexLock lock(p.mu);
    if (p.deleted()) return TopicDeleted(topic);
    return CallLocked(p, act);
  }

  // Closes a partition: ends its leases (kUnknownTopic when `remove_files`, else kUnavailable;
  // `why` when given), closes its log, wakes its readers; for a deleted topic keeps its
  // registrations for the grace period and removes its files. Closing a closed partition does
  // nothing.
  void Close(Partition& p, bool remove_files, std::optional<protocol::WireError> why = std::nullopt)
      EXCLUDES(p.mu);
  // Ends every lease of `p`, telling each producer `why` (a lost leadership).
  void EndLeases(Partition& p, protocol::WireError why) EXCLUDES(p.mu);
  // Drops the graveyard's registrations past their grace period (or all).
  void DropBuried(uint64_t now_ns) EXCLUDES(graveyard_mu_);
  void ClearBuried() EXCLUDES(graveyard_mu_);

 private:
  // Runs task(0) .. task(count - 1) on up to open_threads threads, the caller's among them;
  // once a task returns false no further index is handed out.
  void InPool(size_t count, const std::function<bool(size_t)>& task) const;

  const PartitionOptions options_;
  const uint32_t open_threads_;
  LeaseManager& leases_;
  Publisher& publisher_;
  const std::atomic<bool>& stopping_;

  std::function<bool(const std::string&)> cluster_has_;
  mutable Mutex mu_;
  std::map<std::string, Topic> topics_ GUARDED_BY(mu_);

  Mutex graveyard_mu_;
  std::vector<Buried> graveyard_ GUARDED_BY(graveyard_mu_);
};

}  // namespace rdmq::broker::internal
