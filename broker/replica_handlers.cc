#include "replica_handlers.h"

#include <algorithm>
#include <string>

#include "rdmq/cluster/replica_intake.h"
#include "rdmq/common/log.h"
#include "rpc_handler.h"

namespace rdmq::broker::internal {

using protocol::Api;
using protocol::WireError;

namespace {

template <class Int>
std::string Num(Int v) {
  return std::to_string(v);
}

// A replica lease of the partition's current epoch, used with that epoch.
Status CheckLease(const Partition& p, const Lease& l, int32_t epoch) {
  if (!l.replica()) {
    return Status(WireError::kInvalidRequest,
                  "lease " + Num(l.id.value()) + " is a producer's, not a replica lease");
  }
  if (epoch != l.replica_epoch) {
    return Status(WireError::kInvalidRequest, "replica lease " + Num(l.id.value()) +
                                                  " was granted for leader epoch " + Num(l.replica_epoch) +
                                                  ", the request names " + Num(epoch));
  }
  return CheckReplicaWriter(p, p.leader(), epoch);
}

}  // namespace

cluster::LeaderEpochs EpochsOf(const storage::PartitionLog& log) {
  cluster::LeaderEpochs out;
  for (const storage::EpochStart& e : log.LeaderEpochs()) (void)out.Observe(e.epoch, e.start);
  return out;
}

Status CheckReplicaWriter(const Partition& p, int32_t leader, int32_t epoch) {
  const int32_t current = p.leader_epoch();
  const int32_t now_leader = p.leader();
  const std::string who =
      " (broker " + Num(now_leader) + " leads " + p.where() + " at epoch " + Num(current) + ")";
  if (epoch < current) {
    return Status(WireError::kFencedLeaderEpoch,
                  "leader epoch " + Num(epoch) + " of " + p.where() + " is over" + who);
  }
  if (epoch > current) {
    return Status(WireError::kUnknownLeaderEpoch, "this broker has not seen leader epoch " + Num(epoch) +
                                                      " of " + p.where() + " yet; its latest is " +
                                                      Num(current));
  }
  if (p.serving()) {
    return Status(WireError::kNotLeader,
                  "this broker leads " + p.where() + " itself; it takes no replica writes");
  }
  if (leader != now_leader) {
    return Status(WireError::kNotLeader, "broker " + Num(leader) + " does not lead " + p.where() + who);
  }
  return Status::Ok();
}

Status ReplicaHandlers::Register(rpc::Server& server) {
  using Ctx = const rpc::RequestContext&;
  constexpr auto kPool = rpc::RunOn::kWorkerPool;
  // Replicas are the brokers' business: Alter on the cluster, which the brokers' principal holds.
  RDMQ_RETURN_IF_ERROR(Serve<protocol::OpenReplicaRequest>(
      server, Api::kOpenReplica, kPool, authz_.OnCluster(metadata::AclOperation::kAlter),
      [this](Ctx c, const protocol::OpenReplicaRequest& r) { return OpenReplica(c, r); }));
  // The replica lease is the right from then on.
  RDMQ_RETURN_IF_ERROR(Serve<protocol::ReplicaTruncateRequest>(
      server, Api::kReplicaTruncate, kPool, InHandler{},
      [this](Ctx c, const protocol::ReplicaTruncateRequest& r) { return Truncate(c, r); }));
  return Serve<protocol::ReplicaCommitRequest>(
      server, Api::kReplicaCommit, rpc::RunOn::kDispatcher, InHandler{},
      [this](Ctx c, const protocol::ReplicaCommitRequest& r) { return Commit(c, r); });
}

Result<protocol::OpenReplicaResponse> ReplicaHandlers::OpenReplica(const rpc::RequestContext& ctx,
                                                                   const protocol::OpenReplicaRequest& req) {
  std::shared_ptr<Session> session = sessions_.Find(ctx.client_id);
  if (!session || session->ep_id.load() == 0) {
    return Status(WireError::kInvalidRequest,
                  "connect the data endpoint (Hello, then the data handshake) before OpenReplica");
  }
  RDMQ_ASSIGN_OR_RETURN(const fabric::RegionDescriptor ack, AckRegionOf(req.ack_region));
  std::shared_ptr<Partition> p = topics_.FindReplica(req.topic, req.partition);
  if (!p) {
    return Status(WireError::kNotLeader,
                  "this broker holds no replica of " + req.topic + "-" + Num(req.partition.value()));
  }
  MutexLock lock(p->mu);
  if (p->deleted()) return TopicDeleted(p->where());
  RDMQ_RETURN_IF_ERROR(CheckReplicaWriter(*p, req.leader_id, req.leader_epoch));
  LeaseRequest lr;
  lr.replica_epoch = req.leader_epoch;
  RDMQ_ASSIGN_OR_RETURN(std::shared_ptr<Lease> l, leases_.Open(*p, session, lr, ack));
  protocol::OpenReplicaResponse r;
  r.lease = leases_.Describe(*p, *l);
  r.log_start = p->log().LogStartOffset();
  r.high_watermark = p->log().HighWatermark();
  for (const storage::EpochStart& e : p->log().LeaderEpochs()) r.epochs.push_back({e.epoch, e.start});
  RDMQ_LOG(kInfo, "broker", "replica lease granted to the leader")
      .kv("partition", p->where())
      .kv("leader", req.leader_id)
      .kv("leader_epoch", req.leader_epoch)
      .kv("lease", l->id)
      .kv("log_end", p->active().log_end);
  return r;
}

Result<protocol::LeaseResponse> ReplicaHandlers::Truncate(const rpc::RequestContext& ctx,
                                                          const protocol::ReplicaTruncateRequest& req) {
  protocol::LeaseResponse r;
  std::string topic;
  PartitionId index{0};
  bool start_over = false;
  if (Status done = leases_.WithLease(
          req.lease_id, ctx.client_id,
          [&](Partition& p, const std::shared_ptr<Lease>& l) REQUIRES(p.mu) -> Status {
            RDMQ_RETURN_IF_ERROR(CheckLease(p, *l, req.leader_epoch));
            const Offset was = p.active().log_end;
            if (req.end > was) {
              // Beyond the log end: the leader's log starts there (retention deleted what this
              // replica lacks). The replica starts over, empty, at that offset (below, unlocked).
              topic = p.topic_name();
              index = p.index();
              start_over = true;
              return Status::Ok();
            }
            if (Status s = p.log().TruncateTo(req.end); !s.ok()) {
              return Status(protocol::ToWireError(s), p.where() + ": " + std::string(s.context()));
            }
            if (Status s = p.SyncSegments(); !s.ok()) return Status(WireError::kStorageError, s.ToString());
            p.RebuildProducers();                        // the cut may have taken producers' last batches
            RDMQ_RETURN_IF_ERROR(leases_.Grant(p, *l));  // the window starts at the new end
            leases_.Active(*l);
            l->acked_segment = p.active().base;
            l->acked_position = p.active().committed;
            l->acked_next_offset = p.active().log_end;
            p.MarkDirty();
            publisher_.Publish(p);
            if (was != p.active().log_end) {
              RDMQ_LOG(kInfo, "broker", "replica truncated to where it agrees with its leader")
                  .kv("partition", p.where())
                  .kv("from", was)
                  .kv("to", p.active().log_end)
                  .kv("leader_epoch", req.leader_epoch);
            }
            r = leases_.Describe(p, *l);
            return Status::Ok();
          });
      !done.ok())
    return done;
  if (start_over) {
    if (!restart_) return Status(WireError::kInvalidRequest, "this broker is not in a cluster");
    RDMQ_RETURN_IF_ERROR(restart_(topic, index, req.end));
    // The lease was on the old log: the leader opens the replica again.
    return Status(WireError::kLeaseExpired, topic + "-" + std::to_string(index.value()) +
                                                " started over at offset " + std::to_string(req.end.value()) +
                                                "; open the replica again");
  }
  return r;
}

Result<protocol::CommitResponse> ReplicaHandlers::Commit(const rpc::RequestContext& ctx,
                                                         const protocol::ReplicaCommitRequest& req) {
  protocol::CommitResponse r;
  if (Status done = leases_.WithLease(req.lease_id, ctx.client_id,
                                      [&](Partition& p, const std::shared_ptr<Lease>& l)
                                          REQUIRES(p.mu) { return CommitLocked(p, *l, req, &r); });
      !done.ok())
    return done;
  return r;
}

Status ReplicaHandlers::CommitLocked(Partition& p, Lease& l, const protocol::ReplicaCommitRequest& req,
                                     protocol::CommitResponse* r) {
  RDMQ_RETURN_IF_ERROR(CheckLease(p, l, req.leader_epoch));
  leases_.Active(l);
  const ActiveSegment& a = p.active();
  r->base_offset = kNoOffset;
  if (req.length > 0) {
    if (req.segment_base != a.base || req.segment_base != l.segment_base) {
      return Status(WireError::kStaleLocation, p.where() + ": segment " + Num(req.segment_base.value()) +
                                                   " is not the active segment (" + Num(a.base.value()) +
                                                   "); renew the lease");
    }
    if (req.position != a.committed || req.length > a.capacity - a.committed.value()) {
      return Status(WireError::kInvalidRequest,
                    p.where() + ": a replica range must start at the committed end " +
                        Num(a.committed.value()) + " and end inside the segment (" + Num(a.capacity) +
                        " bytes); got " + Num(req.position.value()) + " + " + Num(req.length));
    }
    const std::span<const std::byte> bytes{a.data + a.committed.value(), req.length};
    cluster::ReplicaRangeFacts facts;
    facts.log_end = a.log_end;
    facts.writer_epoch = l.replica_epoch;
    facts.current_epoch = p.leader_epoch();
    facts.max_batch_bytes = p.config().max_message_bytes;
    auto refuse = [&](const Status& s) REQUIRES(p.mu) {
      Counters::Add(n_.commit_errors);
      RDMQ_LOG(kWarn, "broker", "replica range refused")
          .kv("partition", p.where())
          .kv("lease", l.id)
          .kv("error", s);
      // The bytes lie at the committed end, where recovery's forward scan would adopt them.
      p.SpoilTail(a.committed, req.length);
      const WireError e =
          s.is(Errc::kFailedPrecondition) ? WireError::kFencedLeaderEpoch : protocol::ToWireError(s);
      return Status(e, p.where() + ": " + std::string(s.context()));
    };
    auto checked = cluster::CheckReplicaRange(bytes, facts, EpochsOf(p.log()));
    if (!checked.ok()) return refuse(checked.status());
    if (req.next_offset != kNoOffset && checked->end != req.next_offset) {
      return refuse(Status(Errc::kInvalidArgument, "the range ends at offset " + Num(checked->end.value()) +
                                                       ", the leader says " + Num(req.next_offset.value())));
    }
    storage::CommitRequest cr;
    cr.mode = storage::CommitMode::kExclusive;
    cr.segment = a.base;
    cr.position = a.committed;
    cr.length = req.length;
    cr.expected_next_offset = checked->end;
    const Offset first = a.log_end;
    auto out = p.log().Commit(cr);
    if (!out.ok()) return refuse(out.status());
    p.Advance(out->committed, out->high_watermark);
    p.ObserveProducers(bytes);
    p.NoteIn(req.length);
    p.MarkDirty();
    Counters::Add(n_.commits);
    l.acked_segment = p.active().base;
    l.acked_position = p.active().committed;
    l.acked_next_offset = p.active().log_end;
    r->base_offset = first;
  }
  // The leader's high watermark, up to what this replica holds: a batch boundary in both logs,
  // which agree up to here.
  if (p.replicated()) {
    const Offset hw = std::min(req.high_watermark, p.active().log_end);
    if (hw > p.active().high_watermark) {
      if (Status s = p.Expose(hw); !s.ok()) {
        return Status(WireError::kInvalidRequest,
                      p.where() + ": the leader's high watermark " + Num(hw.value()) + ": " + s.ToString());
      }
    }
  }
  publisher_.Publish(p);
  r->committed_position = p.active().committed;
  r->high_watermark = p.active().high_watermark;
  r->credit_end = Position(p.active().capacity);
  return Status::Ok();
}

}  // namespace rdmq::broker::internal
