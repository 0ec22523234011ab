// The consumer-group and committed-offset RPCs (docs/protocol.md, "Consumer groups"):
// GroupHeartbeat, OffsetCommit, OffsetFetch, ListGroups, DescribeGroup, DeleteGroup, all on the
// worker pool (commits fdatasync the offset log), all carried out by the GroupCoordinator.
#pragma once

#include "group_coordinator.h"
#include "rdmq/rpc/server.h"
#include "session.h"

namespace rdmq::broker::internal {

class GroupHandlers {
 public:
  GroupHandlers(GroupCoordinator& groups, SessionTable& sessions) : groups_(groups), sessions_(sessions) {}
  Status Register(rpc::Server& server);

 private:
  GroupCoordinator& groups_;
  SessionTable& sessions_;
};

}  // namespace rdmq::broker::internal
