// The consuming RPCs (docs/protocol.md section 3): OpenConsume, GetSegment, ListOffsets and
// Watch. They only read a partition's state (Watch registers a wake-up). With authorizer.enabled
// the locations they hand out are the client's own read grants (read_grant.h), not the shared
// read-only descriptors.
//
// Threading: Watch runs on the RPC dispatcher, the others on the worker pool.
#pragma once

#include "authorizer.h"
#include "rdmq/rpc/server.h"
#include "session.h"
#include "topic_table.h"

namespace rdmq::broker::internal {

class ConsumeHandlers {
 public:
  ConsumeHandlers(SessionTable& sessions, TopicTable& topics, const Authorizer& authz)
      : sessions_(sessions), topics_(topics), authz_(authz) {}

  Status Register(rpc::Server& server);

 private:
  Result<protocol::OpenConsumeResponse> OpenConsume(const rpc::RequestContext& ctx,
                                                    const protocol::PartitionRequest& req);
  Result<protocol::GetSegmentResponse> GetSegment(const rpc::RequestContext& ctx,
                                                  const protocol::GetSegmentRequest& req);
  // The client's session when locations are per client (authorizer.enabled), else null.
  Result<std::shared_ptr<Session>> Reader(const rpc::RequestContext& ctx) const;
  Result<protocol::ListOffsetsResponse> ListOffsets(const protocol::ListOffsetsRequest& req);
  Result<protocol::WatchResponse> Watch(const rpc::RequestContext& ctx, const protocol::WatchRequest& req);

  SessionTable& sessions_;
  TopicTable& topics_;
  const Authorizer& authz_;
};

}  // namespace rdmq::broker::internal
