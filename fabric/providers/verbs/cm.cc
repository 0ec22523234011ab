#include "cm.h"

#include <poll.h>

#include <cerrno>

#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal {

Status CmError(const std::string& what) { return Status::FromErrno(errno, what); }

Result<CmChannelPtr> CreateCmChannel() {
  CmChannelPtr channel(rdma_create_event_channel());
  if (!channel) return CmError("rdma_create_event_channel");
  return channel;
}

Result<CmIdPtr> CreateCmId(CmChannelPtr& channel) {
  RDMQ_ASSIGN_OR_RETURN(channel, CreateCmChannel());
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(channel.get(), &id, nullptr, RDMA_PS_TCP) != 0) return CmError("rdma_create_id");
  return CmIdPtr(id);
}

Result<rdma_cm_event*> NextCmEvent(rdma_event_channel* ch, std::chrono::milliseconds timeout) {
  pollfd p{ch->fd, POLLIN, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  if (rc == 0)
    return Status(Errc::kTimeout, "rdma_cm: no event within " + std::to_string(timeout.count()) + " ms");
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev) != 0) return CmError("rdma_get_cm_event");
  return ev;
}

Status ExpectCmEvent(rdma_event_channel* ch, rdma_cm_event_type want, std::chrono::milliseconds timeout,
                     const std::string& what) {
  RDMQ_ASSIGN_OR_RETURN(rdma_cm_event * ev, NextCmEvent(ch, timeout));
  const rdma_cm_event_type got = ev->event;
  const int status = ev->status;
  rdma_ack_cm_event(ev);
  if (got != want) {
    return Status(FabricErrc::kPeerGone, what + ": rdma_cm reported " + rdma_event_str(got) + " (status " +
                                             std::to_string(status) + ") instead of " + rdma_event_str(want));
  }
  return Status::Ok();
}

}  // namespace rdmq::fabric::internal
