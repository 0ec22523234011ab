#include "endpoint.h"

#include <string>

#include "rdmq/common/log.h"

namespace rdmq::fabric::internal {

namespace {
constexpr uint32_t kHelloHasMailbox = 1;
}  // namespace

ShmEpCore::ShmEpCore(ShmCore& fab, const EndpointOptions& o)
    : EndpointCore(Provider::kShm, o),
      fab_(fab),
      send_cq_(static_cast<SoftCq*>(o.send_cq)),
      recv_cq_(static_cast<SoftCq*>(o.recv_cq)) {}

Status ShmEpCore::InitInbound() {
  if (recv_cq_ == nullptr) return Status::Ok();
  return inbox_.Create();
}

Status ShmEpCore::SendShmHello(uint8_t frame_type, int recv_bell_fd) {
  wire::Hello h = MakeHello(fab_.address);
  std::vector<int> fds{fab_.keypage_ro_fd()};
  if (inbox_.valid()) {
    h.flags = kHelloHasMailbox;
    h.mailbox_capacity = kMailboxCapacity;
    fds.push_back(inbox_.fd());
    fds.push_back(recv_bell_fd);
  }
  return SendHello(frame_type, h, fds);
}

Status ShmEpCore::AwaitPeer() {
  std::vector<UniqueFd> fds;
  RDMQ_ASSIGN_OR_RETURN(wire::Hello h, AwaitHelloAck(&fds));
  return AdoptPeer(h, fds);
}

Status ShmEpCore::AdoptPeer(const wire::Hello& h, std::vector<UniqueFd>& fds) {
  const bool has_mailbox = (h.flags & kHelloHasMailbox) != 0;
  const size_t want = has_mailbox ? 3 : 1;
  if (fds.size() != want) {
    return Status(FabricErrc::kProtocol,
                  "shm hello carries " + std::to_string(fds.size()) + " fds, want " + std::to_string(want));
  }
  RDMQ_RETURN_IF_ERROR(RequireSealedMemfd(fds[0].get(), kKeyPageBytes, "peer key page"));
  RDMQ_ASSIGN_OR_RETURN(peer_keys_, MapShared(fds[0].get(), kKeyPageBytes, 0, false, "peer key page"));
  if (has_mailbox) RDMQ_RETURN_IF_ERROR(outbox_.Map(fds[1].get(), fds[2].get(), h.mailbox_capacity));
  peer_id_ = h.endpoint_id;
  peer_node_ = h.node;
  return Status::Ok();
}

void ShmEpCore::Register() {
  if (recv_cq_ != nullptr) {
    recv_cq_->AddSource(this);
    registered_ = true;
  }
}

void ShmEpCore::OnFrame(uint8_t type, uint16_t, std::span<const std::byte> payload,
                        std::vector<UniqueFd>& fds) {
  if (OnCommonFrame(type, payload, fds)) return;
  switch (type) {
    case wire::kFrameAttachReq:
      ServeAttach(payload);
      return;
    case wire::kFrameAttachRep:
      OnAttachReply(payload, fds);
      return;
    default:
      RDMQ_LOG(kWarn, "fabric", "unexpected shm frame; closing").kv("type", type).kv("peer", peer_node_);
      if (conn_) conn_->Close();
  }
}

void ShmEpCore::AfterGone() {
  // Wake a sleeper on the receive queue: posted receives will flush.
  if (recv_cq_ != nullptr) recv_cq_->Ring();
}

void ShmEpCore::AfterClose() {
  if (recv_cq_ == nullptr) return;
  if (registered_) recv_cq_->RemoveSource(this);
  std::vector<Completion> flush;
  {
    MutexLock l(recv_mu_);
    FlushReceives(posted_, id_, flush);
    posted_count_.store(0);
  }
  if (!flush.empty()) recv_cq_->PushMany(flush);
}

Result<std::unique_ptr<Grant>> ShmEpCore::GrantAccess(const std::shared_ptr<ShmCore>& fab, Region& region,
                                                      uint64_t offset, uint64_t length, uint32_t access) {
  return GrantKey<ShmRegion>(region, fab.get(), id_, offset, length, access, "shm");
}

}  // namespace rdmq::fabric::internal
