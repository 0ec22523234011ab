// ReplicaFeed: a replicated partition's leader forwarding its log to one follower
// (docs/replication.md, "Replication over the fabric"), on a thread of its own. It connects to
// the follower's broker as a client, opens a replica lease (OpenReplica: a write window on the
// follower's active segment), finds where the two logs agree from the follower's epoch cache
// (cluster::FollowerTruncationPoint) and cuts the follower back to it (ReplicaTruncate), then
// loops: the committed batches the follower lacks are read from this log (up to
// replica.fetch.max.bytes, whole batches), WRITten into the window and committed
// (ReplicaCommit, with the leader's high watermark); the follower's answer is its ack, which the
// partition's replica set turns into the high watermark. A batch that does not fit the window
// rolls the follower's segment (RenewLease kRenewRoll). With nothing to send it waits for the
// next commit, and passes a grown high watermark on (an empty ReplicaCommit), at least every
// third of the lease (or of replica.lag.time.max.ms): each answer is an ack, so an idle follower
// that holds the log end stays in the ISR.
//
// Any failure (the follower's broker down, a fenced epoch, a refused range) ends the connection;
// the feed connects again after a backoff, from OpenReplica, until it is stopped or this broker
// no longer leads the partition at its epoch.
//
// Threading: its own thread; Stop from any other.
#pragma once

#include <cstdint>
#include <memory>
#include <thread>

#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "replication.h"

namespace rdmq::broker::internal {

class ReplicaFeed {
 public:
  // Starts the thread.
  ReplicaFeed(std::shared_ptr<Partition> p, int32_t epoch, int32_t follower, const ReplicationContext& ctx,
              PartitionReplication& owner);
  ~ReplicaFeed();  // Stop, then waits for the thread
  ReplicaFeed(const ReplicaFeed&) = delete;
  ReplicaFeed& operator=(const ReplicaFeed&) = delete;

  // Asks the thread to end (it does within a request timeout).
  void Stop();

  // What the thread waits on: a commit (Partition::AddCommitWaiter) or Stop.
  struct Wake {
    Mutex mu;
    CondVar cv;
    bool woken GUARDED_BY(mu) = false;
    bool stop GUARDED_BY(mu) = false;
  };

 private:
  void Run();
  // One connection's life: returns when it fails (or OK once stopped).
  Status Serve();
  bool Stopping();

  const std::shared_ptr<Partition> p_;
  const int32_t epoch_;
  const int32_t follower_;
  const ReplicationContext& ctx_;
  PartitionReplication& owner_;
  const std::shared_ptr<Wake> wake_ = std::make_shared<Wake>();
  std::thread thread_;
};

}  // namespace rdmq::broker::internal
