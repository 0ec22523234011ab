// The consumer-group and committed-offset RPCs (docs/protocol.md, "Consumer groups"):
// GroupHeartbeat, OffsetCommit, OffsetFetch, ListGroups, DescribeGroup, DeleteGroup and
// FindCoordinator, all on the worker pool (commits fdatasync the offset log), all carried out by
// the GroupCoordinator. In a cluster each group has one coordinating broker
// (ClusterMember::CoordinatorOf); the others refuse its requests with NOT_COORDINATOR, and
// ListGroups lists only the groups this broker coordinates.
#pragma once

#include "authorizer.h"
#include "cluster_member.h"
#include "group_coordinator.h"
#include "rdmq/rpc/server.h"
#include "session.h"

namespace rdmq::broker::internal {

class GroupHandlers {
 public:
  // `cluster`: nullptr on a broker on its own (it coordinates every group).
  GroupHandlers(GroupCoordinator& groups, SessionTable& sessions, const Authorizer& authz,
                const ClusterMember* cluster)
      : groups_(groups), sessions_(sessions), authz_(authz), cluster_(cluster) {}
  Status Register(rpc::Server& server);

 private:
  protocol::FindCoordinatorResponse FindCoordinator(const std::string& group) const;
  // NOT_COORDINATOR (naming the coordinator) when another broker coordinates `group`.
  Status CheckCoordinator(const std::string& group) const;

  GroupCoordinator& groups_;
  SessionTable& sessions_;
  const Authorizer& authz_;
  const ClusterMember* cluster_;
};

}  // namespace rdmq::broker::internal
