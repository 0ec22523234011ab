#include "produce_handlers.h"

#include <algorithm>
#include <future>

#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"
#include "rpc_handler.h"

namespace rdmq::broker::internal {

using protocol::Api;
using protocol::WireError;

Status ProduceHandlers::Register(rpc::Server& server) {
  using Ctx = const rpc::RequestContext&;
  constexpr auto kPool = rpc::RunOn::kWorkerPool;
  RDMQ_RETURN_IF_ERROR(Serve<protocol::OpenProduceRequest>(
      server, Api::kOpenProduce, kPool,
      authz_.OnTopic(metadata::AclOperation::kWrite, &protocol::OpenProduceRequest::topic),
      [this](Ctx c, const protocol::OpenProduceRequest& r) { return OpenProduce(c, r); }));
  // Write on the lease's topic, checked again at every renewal.
  RDMQ_RETURN_IF_ERROR(Serve<protocol::LeaseRequest>(
      server, Api::kRenewLease, kPool, InHandler{},
      [this](Ctx c, const protocol::LeaseRequest& r) { return RenewLease(c, r); }));
  // Giving a lease back needs no right.
  RDMQ_RETURN_IF_ERROR(Serve<protocol::LeaseRequest>(
      server, Api::kReleaseLease, kPool, Open{},
      [this](Ctx c, const protocol::LeaseRequest& r) { return ReleaseLease(c, r); }));
  // The lease is the right: granted with Write, ended as soon as an ACL takes Write away
  // (Broker's revocation sweep), so a Commit under a live lease is allowed.
  return Serve<protocol::CommitRequest>(
      server, Api::kCommit, rpc::RunOn::kDispatcher, InHandler{},
      [this](Ctx c, const protocol::CommitRequest& r) { return Commit(c, r); });
}

Result<protocol::LeaseResponse> ProduceHandlers::OpenProduce(const rpc::RequestContext& ctx,
                                                             const protocol::OpenProduceRequest& req) {
  if (req.mode != protocol::ProduceMode::kExclusive && req.mode != protocol::ProduceMode::kShared) {
    return Status(WireError::kInvalidRequest,
                  "produce mode " + std::to_string(static_cast<int>(req.mode)) + " (1 exclusive, 2 shared)");
  }
  std::shared_ptr<Session> session = sessions_.Find(ctx.client_id);
  if (!session || session->ep_id.load() == 0) {
    return Status(WireError::kInvalidRequest,
                  "connect the data endpoint (Hello, then the data handshake) before OpenProduce");
  }
  if (req.acks != protocol::AckLevel::kLeader && req.acks != protocol::AckLevel::kInSync) {
    return Status(WireError::kInvalidRequest, "acks level " + std::to_string(static_cast<int>(req.acks)) +
                                                  " (1 the leader's commit, 2 every in-sync replica)");
  }
  RDMQ_ASSIGN_OR_RETURN(const fabric::RegionDescriptor ack, AckRegionOf(req.ack_region));
  const bool in_sync = req.acks == protocol::AckLevel::kInSync;
  if (in_sync) RDMQ_RETURN_IF_ERROR(AwaitReplicated(req));
  LeaseRequest lr{req.mode, req.producer_id, req.producer_epoch};
  lr.ack_in_sync = in_sync;
  protocol::LeaseResponse r;
  if (Status done = topics_.WithPartition(req.topic, req.partition,
                                          [&](Partition& p) REQUIRES(p.mu) {
                                            if (in_sync) RDMQ_RETURN_IF_ERROR(p.CheckAcksAll());
                                            RDMQ_ASSIGN_OR_RETURN(std::shared_ptr<Lease> l,
                                                                  leases_.Open(p, session, lr, ack));
                                            r = leases_.Describe(p, *l);
                                            RDMQ_LOG(kDebug, "broker", "lease granted")
                                                .kv("partition", p.where())
                                                .kv("lease", l->id)
                                                .kv("mode", l->shared() ? "shared" : "exclusive")
                                                .kv("client", ctx.client_id)
                                                .kv("producer_id", l->producer_id)
                                                .kv("segment", l->segment_base)
                                                .kv("position", p.active().committed);
                                            return Status::Ok();
                                          });
      !done.ok())
    return done;
  return r;
}

Status ProduceHandlers::AwaitReplicated(const protocol::OpenProduceRequest& req) {
  // A producer that lost its lease completes the batches the broker already has (last_sequence):
  // with acks=all only once the followers hold them too. Rare (a new leader, a lease lost
  // between commit and ack), and bounded: this runs on the RPC worker pool.
  constexpr auto kLimit = std::chrono::seconds(5);
  auto done = std::make_shared<std::promise<Status>>();
  std::future<Status> replicated = done->get_future();
  Status waiting = topics_.WithPartition(req.topic, req.partition, [&](Partition& p) REQUIRES(p.mu) {
    // Refused at once rather than after the wait: too few in sync.
    Status admitted = p.CheckAcksAll();
    if (admitted.ok()) p.WhenReplicated(p.active().log_end, [done](const Status& s) { done->set_value(s); });
    return admitted;
  });
  if (!waiting.ok()) return waiting;
  if (replicated.wait_for(kLimit) != std::future_status::ready) {
    return Status(WireError::kNotEnoughReplicas,
                  "the records of " + req.topic + "-" + std::to_string(req.partition.value()) +
                      " before this lease are not in every in-sync replica after 5 s");
  }
  return replicated.get();
}

Result<protocol::LeaseResponse> ProduceHandlers::RenewLease(const rpc::RequestContext& ctx,
                                                            const protocol::LeaseRequest& req) {
  protocol::LeaseResponse r;
  const std::string user = authz_.enabled() ? authz_.UserOf(ctx.client_id) : std::string();
  if (Status done = leases_.WithLease(
          req.lease_id, ctx.client_id,
          [&](Partition& p, const std::shared_ptr<Lease>& l) REQUIRES(p.mu) -> Status {
            // A replica lease is its leader's right itself (OpenReplica checked the cluster's).
            if (Status may = l->replica() ? Status::Ok()
                                          : authz_.Check(user, metadata::AclOperation::kWrite,
                                                         metadata::AclResourceType::kTopic, p.topic_name());
                !may.ok()) {
              leases_.EndLocked(p, l, WireError::kTopicAuthorizationFailed, true);
              return may;
            }
            if ((req.flags & (protocol::kRenewRoll | protocol::kRenewActive)) != 0) {
              leases_.Active(*l);
            } else {
              leases_.Extend(*l);
            }
            if (!l->shared() && (req.flags & protocol::kRenewRoll) != 0 &&
                l->segment_base == p.active().base && p.active().committed.value() > 0) {
              if (Status s = p.log().Roll(); !s.ok()) {
                return Status(WireError::kStorageError, "rolling " + p.where() + ": " + s.ToString());
              }
              if (Status s = p.SyncSegments(); !s.ok()) return Status(WireError::kStorageError, s.ToString());
              publisher_.Publish(p);
            }
            if (l->segment_base != p.active().base) RDMQ_RETURN_IF_ERROR(leases_.Grant(p, *l));
            r = leases_.Describe(p, *l);
            return Status::Ok();
          });
      !done.ok())
    return done;
  return r;
}

Result<protocol::Empty> ProduceHandlers::ReleaseLease(const rpc::RequestContext& ctx,
                                                      const protocol::LeaseRequest& req) {
  RDMQ_ASSIGN_OR_RETURN(std::shared_ptr<Lease> l, leases_.Find(req.lease_id, ctx.client_id));
  leases_.End(l, WireError::kLeaseExpired, false);
  return protocol::Empty{};
}

Result<protocol::CommitResponse> ProduceHandlers::Commit(const rpc::RequestContext& ctx,
                                                         const protocol::CommitRequest& req) {
  const uint64_t t0 = MonoNanos();
  protocol::CommitResponse r;
  Status done = leases_.WithLease(req.lease_id, ctx.client_id,
                                  [&](Partition& p, const std::shared_ptr<Lease>& l)
                                      REQUIRES(p.mu) { return CommitLocked(p, l, req, &r); });
  n_.rpc_commit_ns.Observe(MonoNanos() - t0);
  if (!done.ok()) return done;
  return r;
}

Status ProduceHandlers::CommitLocked(Partition& p, const std::shared_ptr<Lease>& l,
                                     const protocol::CommitRequest& req, protocol::CommitResponse* r) {
  if (l->replica()) return ReplicaCommitOnly(*l);
  const Offset segment = req.segment_base;
  const Position position = req.position;
  const SegmentReg* seg = p.FindSegment(segment);
  const bool writable = seg != nullptr && !seg->info.sealed;
  const uint64_t capacity = writable ? seg->info.capacity : 0;
  const bool shared = l->shared();
  // acks=all: refused before it is committed while too few replicas are in sync (the producer
  // opens a lease again, which waits for them; as CommitPoller does for exclusive leases).
  if (l->ack_in_sync) RDMQ_RETURN_IF_ERROR(p.CheckAcksAll());
  const Committer who{l->producer_id, l->producer_epoch, shared};
  const CommitValidator v = p.Validator();
  RDMQ_ASSIGN_OR_RETURN(const bool inside,
                        v.CheckRequest(who, writable, segment, position, req.length, capacity, p.active()));
  BatchCheck check;
  if (inside) {
    check = v.CheckBatches(who, {seg->info.data() + position.value(), req.length});
    if (check.duplicates != 0) Counters::Add(n_.duplicates, check.duplicates);
    if (!check.status.ok()) {
      Counters::Add(n_.commit_errors);
      // Exclusive: the bytes sit at the committed end, where recovery would adopt them.
      if (!shared && segment == p.active().base) p.SpoilTail(position, req.length);
      return check.status;
    }
  }
  storage::CommitRequest cr;
  cr.mode = shared ? storage::CommitMode::kShared : storage::CommitMode::kExclusive;
  cr.segment = segment;
  cr.position = position;
  cr.length = req.length;
  cr.expected_next_offset = shared ? kNoOffset : req.next_offset;
  leases_.Active(*l);
  auto out = p.log().Commit(cr);
  if (!out.ok()) {
    if (out.status().is(storage::StorageErrc::kSegmentFull)) {
      // A reservation crossing (or past) the end: the segment ends there once what precedes it
      // is committed. The producer renews for the next segment and retries.
      (void)p.SyncSegments();
      publisher_.Publish(p);
      r->base_offset = kNoOffset;
      r->committed_position = p.active().committed;
      r->high_watermark = p.active().high_watermark;
      r->credit_end = Position(capacity);
      r->flags = protocol::kCommitFlagSegmentFull;
      return Status::Ok();
    }
    Counters::Add(n_.commit_errors);
    RDMQ_LOG(kWarn, "broker", "commit refused")
        .kv("partition", p.where())
        .kv("lease", l->id)
        .kv("error", out.status());
    if (!shared && segment == p.active().base && position == p.active().committed) {
      p.SpoilTail(position, req.length);
    }
    return Status(protocol::ToWireError(out.status()), std::string(out.status().context()));
  }
  Counters::Add(n_.commits);
  p.NoteIn(req.length);
  if (l->producer_id.value() >= 0) p.producers().Set(l->producer_id, check.next);
  p.MarkDirty();
  if (shared && !out->complete) {
    PendingRange pr;
    pr.lease_id = l->id;
    pr.producer_id = l->producer_id;
    pr.first_sequence = check.first_sequence;
    p.AddPending(segment, position, std::move(pr));
  }
  r->base_offset = out->complete ? out->base_offset : kNoOffset;
  std::vector<storage::CompletedRange> completed(out->completed.begin(), out->completed.end());
  std::vector<storage::CompletedRange> dropped(out->dropped.begin(), out->dropped.end());
  (void)p.SyncSegments();
  if (shared) {
    leases_.Settle(p, completed, dropped);
    if (out->complete && l->ack_in_sync) {
      // acks=all: the answer's offsets do not acknowledge it; the lease's ack block does, once
      // the high watermark covers the range.
      auto mine = std::find_if(completed.begin(), completed.end(), [&](const storage::CompletedRange& c) {
        return c.segment == segment && c.position == position;
      });
      leases_.AckRange(p, l, segment, position + req.length,
                       mine != completed.end() ? mine->next_offset : p.active().log_end);
    } else if (out->complete) {
      l->acked_segment = segment;
      l->acked_position = std::max(l->acked_position, position + req.length);
    }
  } else {
    l->acked_segment = p.active().base;
    l->acked_position = p.active().committed;
    l->acked_next_offset = p.active().log_end;
  }
  if (!completed.empty()) publisher_.Publish(p);
  r->committed_position = out->committed;
  r->high_watermark = out->high_watermark;
  r->credit_end = Position(capacity);
  return Status::Ok();
}

}  // namespace rdmq::broker::internal
