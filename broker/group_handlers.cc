#include "group_handlers.h"

#include "rpc_handler.h"

namespace rdmq::broker::internal {

using protocol::Api;

namespace {
Result<protocol::Empty> Done(const Status& s) {
  if (!s.ok()) return s;
  return protocol::Empty{};
}
}  // namespace

Status GroupHandlers::Register(rpc::Server& server) {
  using Ctx = const rpc::RequestContext&;
  constexpr auto kPool = rpc::RunOn::kWorkerPool;
  RDMQ_RETURN_IF_ERROR(Serve<protocol::GroupHeartbeatRequest>(
      server, Api::kGroupHeartbeat, kPool, [this](Ctx ctx, const protocol::GroupHeartbeatRequest& r) {
        const auto session = sessions_.Find(ctx.client_id);
        return groups_.Heartbeat(r, session ? session->Name() : "client-" + std::to_string(ctx.client_id));
      }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::OffsetCommitRequest>(
      server, Api::kOffsetCommit, kPool,
      [this](Ctx, const protocol::OffsetCommitRequest& r) { return Done(groups_.Commit(r)); }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::OffsetFetchRequest>(
      server, Api::kOffsetFetch, kPool,
      [this](Ctx, const protocol::OffsetFetchRequest& r) { return groups_.Fetch(r); }));
  RDMQ_RETURN_IF_ERROR(
      Serve<protocol::Empty>(server, Api::kListGroups, kPool,
                             [this](Ctx, const protocol::Empty&) -> Result<protocol::ListGroupsResponse> {
                               return groups_.List();
                             }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::GroupRequest>(
      server, Api::kDescribeGroup, kPool,
      [this](Ctx, const protocol::GroupRequest& r) { return groups_.Describe(r.group); }));
  return Serve<protocol::GroupRequest>(
      server, Api::kDeleteGroup, kPool,
      [this](Ctx, const protocol::GroupRequest& r) -> Result<protocol::Empty> {
        RDMQ_RETURN_IF_ERROR(groups_.Delete(r.group));
        return protocol::Empty{};
      });
}

}  // namespace rdmq::broker::internal
