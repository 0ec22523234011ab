// Finding the broker that coordinates a consumer group (FindCoordinator, docs/protocol.md). A
// broker on its own coordinates every group; in a cluster one live broker does, chosen by the
// group's name, and the others refuse the group's requests with NOT_COORDINATOR.
#pragma once

#include <string>

#include "rdmq/client/connection.h"
#include "rdmq/common/status.h"

namespace rdmq::client {

// Points `conn` at `group`'s coordinator: asks the broker it is connected to (after connecting
// again to a bootstrap server when that one went away) and, when another broker coordinates the
// group, connects to that one instead (Install). For a connection without a data endpoint; one
// thread at a time. Errors: kUnavailable when no broker answers; NOT_COORDINATOR when the cluster
// has no live broker to coordinate it; the group's own errors (INVALID_GROUP_ID, an ACL refusal).
Status FollowCoordinator(Connection& conn, const std::string& group);

}  // namespace rdmq::client
