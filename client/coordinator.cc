#include "rdmq/client/coordinator.h"

#include "rdmq/protocol/group_messages.h"

namespace rdmq::client {

Status FollowCoordinator(Connection& conn, const std::string& group) {
  if (!conn.connected()) RDMQ_RETURN_IF_ERROR(conn.Reconnect());
  RDMQ_ASSIGN_OR_RETURN(auto c, (conn.Call<protocol::FindCoordinatorResponse>(
                                    protocol::Api::kFindCoordinator, protocol::GroupRequest{group})));
  if (c.control.empty() || c.control == conn.address()) return Status::Ok();
  auto link = conn.DialAt(c.control);
  if (!link.ok()) {
    return link.status().WithContext("group '" + group + "' coordinator, broker " + std::to_string(c.broker));
  }
  conn.Install(std::move(*link));
  return Status::Ok();
}

}  // namespace rdmq::client
