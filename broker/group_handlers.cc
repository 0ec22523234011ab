#include "group_handlers.h"

#include "rpc_handler.h"

namespace rdmq::broker::internal {

using protocol::Api;
using protocol::WireError;

protocol::FindCoordinatorResponse GroupHandlers::FindCoordinator(const std::string& group) const {
  protocol::FindCoordinatorResponse r;
  if (cluster_ == nullptr) {
    r.broker = 0;  // this broker (a broker on its own has no id that matters to clients)
    return r;
  }
  r.broker = cluster_->CoordinatorOf(group);
  if (r.broker != cluster_->id()) {
    const cluster::ClusterSnapshot view = cluster_->View();
    auto b = view.brokers.find(r.broker);
    r.control = b == view.brokers.end() ? "" : b->second.control;
    if (r.control.empty()) r.broker = -1;
  }
  return r;
}

Status GroupHandlers::CheckCoordinator(const std::string& group) const {
  if (cluster_ == nullptr) return Status::Ok();
  const protocol::FindCoordinatorResponse c = FindCoordinator(group);
  if (c.broker == cluster_->id()) return Status::Ok();
  if (c.broker < 0)
    return Status(WireError::kNotCoordinator, "no live broker coordinates group '" + group + "'");
  return Status(WireError::kNotCoordinator, "group '" + group + "' is coordinated by broker " +
                                                std::to_string(c.broker) + " at " + c.control);
}

Status GroupHandlers::Register(rpc::Server& server) {
  using Ctx = const rpc::RequestContext&;
  using metadata::AclOperation;
  using metadata::AclResourceType;
  constexpr auto kPool = rpc::RunOn::kWorkerPool;
  RDMQ_RETURN_IF_ERROR(Serve<protocol::GroupHeartbeatRequest>(
      server, Api::kGroupHeartbeat, kPool,
      authz_.OnGroup(AclOperation::kRead, &protocol::GroupHeartbeatRequest::group),
      [this](Ctx ctx, const protocol::GroupHeartbeatRequest& r) -> Result<protocol::GroupHeartbeatResponse> {
        if (Status c = CheckCoordinator(r.group); !c.ok()) return c;
        const auto session = sessions_.Find(ctx.client_id);
        return groups_.Heartbeat(r, session ? session->Name() : "client-" + std::to_string(ctx.client_id));
      }));
  // `op` on the group and on every topic the request names (`entries`: its list, each with a
  // `topic`): all or none, as the request.
  const auto group_and_topics = [this](AclOperation op, auto entries) {
    return [this, op, entries](Ctx ctx, const auto& r) -> Status {
      if (!authz_.enabled()) return Status::Ok();
      const std::string user = authz_.UserOf(ctx.client_id);
      RDMQ_RETURN_IF_ERROR(authz_.Check(user, op, AclResourceType::kGroup, r.group));
      for (const auto& e : r.*entries)
        RDMQ_RETURN_IF_ERROR(authz_.Check(user, op, AclResourceType::kTopic, e.topic));
      return Status::Ok();
    };
  };
  // Read on the group and on every topic committed.
  RDMQ_RETURN_IF_ERROR(Serve<protocol::OffsetCommitRequest>(
      server, Api::kOffsetCommit, kPool,
      group_and_topics(AclOperation::kRead, &protocol::OffsetCommitRequest::offsets),
      [this](Ctx, const protocol::OffsetCommitRequest& r) -> Result<protocol::Empty> {
        if (Status c = CheckCoordinator(r.group); !c.ok()) return c;
        return Done(groups_.Commit(r));
      }));
  // Describe on the group and on each topic named; without names, the topics the client may not
  // describe are left out of the answer.
  const auto fetch_rule =
      group_and_topics(AclOperation::kDescribe, &protocol::OffsetFetchRequest::partitions);
  RDMQ_RETURN_IF_ERROR(Serve<protocol::OffsetFetchRequest>(
      server, Api::kOffsetFetch, kPool, fetch_rule,
      [this](Ctx ctx, const protocol::OffsetFetchRequest& r) -> Result<protocol::OffsetFetchResponse> {
        if (Status c = CheckCoordinator(r.group); !c.ok()) return c;
        RDMQ_ASSIGN_OR_RETURN(protocol::OffsetFetchResponse f, groups_.Fetch(r));
        if (authz_.enabled()) {
          const std::string user = authz_.UserOf(ctx.client_id);
          std::erase_if(f.offsets, [&](const protocol::OffsetEntry& o) {
            return !authz_.Allowed(user, AclOperation::kDescribe, AclResourceType::kTopic, o.topic);
          });
        }
        return f;
      }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::Empty>(  // the groups the client may describe
      server, Api::kListGroups, kPool, InHandler{},
      [this](Ctx ctx, const protocol::Empty&) -> Result<protocol::ListGroupsResponse> {
        protocol::ListGroupsResponse l = groups_.List();
        if (cluster_ != nullptr) {  // a group listed by its coordinator only
          std::erase_if(l.groups, [&](const protocol::GroupListing& g) {
            return cluster_->CoordinatorOf(g.group) != cluster_->id();
          });
        }
        if (authz_.enabled()) {
          const std::string user = authz_.UserOf(ctx.client_id);
          std::erase_if(l.groups, [&](const protocol::GroupListing& g) {
            return !authz_.Allowed(user, AclOperation::kDescribe, AclResourceType::kGroup, g.group);
          });
        }
        return l;
      }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::GroupRequest>(
      server, Api::kDescribeGroup, kPool,
      authz_.OnGroup(AclOperation::kDescribe, &protocol::GroupRequest::group),
      [this](Ctx, const protocol::GroupRequest& r) -> Result<protocol::DescribeGroupResponse> {
        if (Status c = CheckCoordinator(r.group); !c.ok()) return c;
        return groups_.Describe(r.group);
      }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::GroupRequest>(
      server, Api::kDeleteGroup, kPool, authz_.OnGroup(AclOperation::kDelete, &protocol::GroupRequest::group),
      [this](Ctx, const protocol::GroupRequest& r) -> Result<protocol::Empty> {
        if (Status c = CheckCoordinator(r.group); !c.ok()) return c;
        if (Status d = groups_.Delete(r.group); !d.ok()) return d;
        return protocol::Empty{};
      }));
  // Describe on the group, as Kafka's FindCoordinator asks.
  return Serve<protocol::GroupRequest>(
      server, Api::kFindCoordinator, kPool,
      authz_.OnGroup(AclOperation::kDescribe, &protocol::GroupRequest::group),
      [this](Ctx, const protocol::GroupRequest& r) -> Result<protocol::FindCoordinatorResponse> {
        RDMQ_RETURN_IF_ERROR(metadata::ValidateGroupId(r.group));
        protocol::FindCoordinatorResponse c = FindCoordinator(r.group);
        if (c.broker < 0)
          return Status(WireError::kNotCoordinator, "no live broker coordinates group '" + r.group + "'");
        return c;
      });
}

}  // namespace rdmq::broker::internal
