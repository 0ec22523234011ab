// The follower's side of replication (docs/protocol.md, "Replication"; docs/replication.md,
// "Replication over the fabric"): the partition's leader opens a replica lease on this broker's
// replica (OpenReplica: a write window on the active segment from the log end, as an exclusive
// producer's), cuts the log back to where the two logs agree (ReplicaTruncate), and commits the
// batches it WROTE into the window (ReplicaCommit), passing its high watermark on. A range is
// checked as a whole (cluster::CheckReplicaRange: whole CRC-valid batches continuing the log,
// leader epochs stamped and in order) and taken whole or not at all; the follower exposes the
// leader's high watermark up to what it holds.
//
// Only the leader of the partition's current leader epoch is served: an older epoch is
// FENCED_LEADER_EPOCH (a deposed leader, and a newer epoch's lease ends the older one), a newer
// one UNKNOWN_LEADER_EPOCH (this broker has not seen it yet), another broker or a partition this
// broker leads NOT_LEADER. Served in a cluster only; OpenReplica needs Alter on the cluster (the
// brokers' own principal), the lease is the right afterwards.
//
// Threading: ReplicaCommit runs on the RPC dispatcher (a connection's commits in order), the
// others on the worker pool; each works under the partition's lock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "authorizer.h"
#include "counters.h"
#include "lease_manager.h"
#include "publisher.h"
#include "rdmq/cluster/leader_epochs.h"
#include "rdmq/protocol/replica_messages.h"
#include "rdmq/rpc/server.h"
#include "session.h"
#include "topic_table.h"

namespace rdmq::broker::internal {

class ReplicaHandlers {
 public:
  ReplicaHandlers(SessionTable& sessions, TopicTable& topics, LeaseManager& leases, Publisher& publisher,
                  Counters& counters, const Authorizer& authz)
      : sessions_(sessions),
        topics_(topics),
        leases_(leases),
        publisher_(publisher),
        n_(counters),
        authz_(authz) {}

  Status Register(rpc::Server& server);
  // How a follower's replica starts over at its leader's log start (ClusterMember::RestartReplica),
  // asked for by a ReplicaTruncate beyond the log end. Set once, before Register.
  using Restart = std::function<Status(const std::string& topic, PartitionId index, Offset start)>;
  void SetRestart(Restart restart) { restart_ = std::move(restart); }

 private:
  Result<protocol::OpenReplicaResponse> OpenReplica(const rpc::RequestContext& ctx,
                                                    const protocol::OpenReplicaRequest& req);
  Result<protocol::LeaseResponse> Truncate(const rpc::RequestContext& ctx,
                                           const protocol::ReplicaTruncateRequest& req);
  Result<protocol::CommitResponse> Commit(const rpc::RequestContext& ctx,
                                          const protocol::ReplicaCommitRequest& req);
  Status CommitLocked(Partition& p, Lease& l, const protocol::ReplicaCommitRequest& req,
                      protocol::CommitResponse* r) REQUIRES(p.mu);

  SessionTable& sessions_;
  TopicTable& topics_;
  LeaseManager& leases_;
  Publisher& publisher_;
  Counters& n_;
  const Authorizer& authz_;
  Restart restart_;
};

// The log's epoch cache as the replication decisions take it.
cluster::LeaderEpochs EpochsOf(const storage::PartitionLog& log);

// Whether `leader` at `epoch` may write this broker's replica `p` now (see above).
Status CheckReplicaWriter(const Partition& p, int32_t leader, int32_t epoch);

}  // namespace rdmq::broker::internal
