// rdma_cm and verbs error helpers of the verbs provider.
#pragma once

#include <rdma/rdma_cma.h>

#include <chrono>
#include <string>

#include "rdmq/common/status.h"
#include "resources.h"

namespace rdmq::fabric::internal {

// The errno of a failed verbs or rdma_cm call, with `what` as context.
Status CmError(const std::string& what);
// A new rdma_cm event channel.
Result<CmChannelPtr> CreateCmChannel();
// A new event channel, stored in `channel`, and an rdma_cm id (RDMA_PS_TCP) reporting to it.
Result<CmIdPtr> CreateCmId(CmChannelPtr& channel);
// Waits for the next event on `ch` (up to `timeout`); the caller acks it.
Result<rdma_cm_event*> NextCmEvent(rdma_event_channel* ch, std::chrono::milliseconds timeout);
// Waits for an event of type `want` on `ch`; anything else is a kPeerGone error naming what came.
Status ExpectCmEvent(rdma_event_channel* ch, rdma_cm_event_type want, std::chrono::milliseconds timeout,
                     const std::string& what);

}  // namespace rdmq::fabric::internal
