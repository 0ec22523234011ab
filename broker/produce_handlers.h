// The producing RPCs (docs/protocol.md section 3): OpenProduce, RenewLease, ReleaseLease and
// Commit (the shared producers' commit, and the exclusive one's when it does not use the data
// plane's immediate).
//
// Threading: Commit runs on the RPC dispatcher, so that a connection's requests are handled in
// the order they were sent (the idempotent producer's sequence check relies on it); the others
// on the worker pool.
#pragma once

#include "authorizer.h"
#include "counters.h"
#include "lease_manager.h"
#include "publisher.h"
#include "rdmq/rpc/server.h"
#include "session.h"
#include "topic_table.h"

namespace rdmq::broker::internal {

class ProduceHandlers {
 public:
  ProduceHandlers(SessionTable& sessions, TopicTable& topics, LeaseManager& leases, Publisher& publisher,
                  Counters& counters, const Authorizer& authz)
      : sessions_(sessions),
        topics_(topics),
        leases_(leases),
        publisher_(publisher),
        n_(counters),
        authz_(authz) {}

  Status Register(rpc::Server& server);

 private:
  Result<protocol::LeaseResponse> OpenProduce(const rpc::RequestContext& ctx,
                                              const protocol::OpenProduceRequest& req);
  // acks=all: waits (up to 5 s) until every in-sync replica holds what the partition committed,
  // so that batches the producer finds stored (last_sequence) are acknowledged only then;
  // refused at once below min.insync.replicas (Partition::CheckAcksAll), NOT_ENOUGH_REPLICAS
  // too when they do not catch up in time.
  Status AwaitReplicated(const protocol::OpenProduceRequest& req);
  Result<protocol::LeaseResponse> RenewLease(const rpc::RequestContext& ctx,
                                             const protocol::LeaseRequest& req);
  Result<protocol::Empty> ReleaseLease(const rpc::RequestContext& ctx, const protocol::LeaseRequest& req);
  Result<protocol::CommitResponse> Commit(const rpc::RequestContext& ctx, const protocol::CommitRequest& req);
  Status CommitLocked(Partition& p, const std::shared_ptr<Lease>& l, const protocol::CommitRequest& req,
                      protocol::CommitResponse* r) REQUIRES(p.mu);

  SessionTable& sessions_;
  TopicTable& topics_;
  LeaseManager& leases_;
  Publisher& publisher_;
  Counters& n_;
  const Authorizer& authz_;
};

}  // namespace rdmq::broker::internal
