// The consumer-group and committed-offset RPCs (docs/protocol.md, "Consumer groups"):
// GroupHeartbeat, OffsetCommit, OffsetFetch, ListGroups, DescribeGroup, DeleteGroup, all on the
// worker pool (commits fdatasync the offset log), all carried out by the GroupCoordinator.
#pragma once

#include "authorizer.h"
#include "group_coordinator.h"
#include "rdmq/rpc/server.h"
#include "session.h"

namespace rdmq::broker::internal {

class GroupHandlers {
 public:
  GroupHandlers(GroupCoordinator& groups, SessionTable& sessions, const Authorizer& authz)
      : groups_(groups), sessions_(sessions), authz_(authz) {}
  Status Register(rpc::Server& server);

 private:
  GroupCoordinator& groups_;
  SessionTable& sessions_;
  const Authorizer& authz_;
};

}  // namespace rdmq::broker::internal
