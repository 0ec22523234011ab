// The consuming RPCs (docs/protocol.md section 3): OpenConsume, GetSegment, ListOffsets and
// Watch. They only read a partition's state (Watch registers a wake-up).
//
// Threading: Watch runs on the RPC dispatcher, the others on the worker pool.
#pragma once

#include "rdmq/rpc/server.h"
#include "session.h"
#include "topic_table.h"

namespace rdmq::broker::internal {

class ConsumeHandlers {
 public:
  ConsumeHandlers(SessionTable& sessions, TopicTable& topics) : sessions_(sessions), topics_(topics) {}

  Status Register(rpc::Server& server);

 private:
  Result<protocol::OpenConsumeResponse> OpenConsume(const protocol::PartitionRequest& req);
  Result<protocol::GetSegmentResponse> GetSegment(const protocol::GetSegmentRequest& req);
  Result<protocol::ListOffsetsResponse> ListOffsets(const protocol::ListOffsetsRequest& req);
  Result<protocol::WatchResponse> Watch(const rpc::RequestContext& ctx, const protocol::WatchRequest& req);

  SessionTable& sessions_;
  TopicTable& topics_;
};

}  // namespace rdmq::broker::internal
