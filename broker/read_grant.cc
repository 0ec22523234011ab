#include "read_grant.h"

#include <utility>

#include "rdmq/common/log.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::broker::internal {

using protocol::WireError;

ReadGrant::ReadGrant(std::shared_ptr<Session> s, std::unique_ptr<fabric::Grant> g)
    : session_(std::move(s)), grant_(std::move(g)), descriptor_(grant_->descriptor().Encode()) {}

Result<std::unique_ptr<ReadGrant>> ReadGrant::Make(std::shared_ptr<Session> session, fabric::Region& region,
                                                   uint64_t length) {
  std::unique_ptr<fabric::Grant> g;
  {
    MutexLock lock(session->mu);
    if (session->ep == nullptr) {
      return Status(WireError::kInvalidRequest,
                    "connect the data endpoint (Hello, then the data handshake) before reading: this broker "
                    "grants read access per client (authorizer.enabled)");
    }
    if (!session->usable()) return Status(WireError::kUnavailable, "the client's data endpoint is closed");
    RDMQ_ASSIGN_OR_RETURN(g, session->ep->GrantAccess(region, 0, length, fabric::kRemoteRead));
  }
  return std::unique_ptr<ReadGrant>(new ReadGrant(std::move(session), std::move(g)));
}

ReadGrant::~ReadGrant() {
  MutexLock lock(session_->mu);
  if (Status s = grant_->Revoke(); !s.ok()) {
    RDMQ_LOG(kWarn, "broker", "revoking a read grant failed")
        .kv("client", session_->client_id)
        .kv("error", s);
  }
  grant_.reset();
}

}  // namespace rdmq::broker::internal
