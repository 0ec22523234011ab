#include "endpoint.h"

#include "rdmq/common/log.h"

namespace rdmq::fabric::internal {

TcpEpCore::TcpEpCore(TcpCore& fab, const EndpointOptions& o)
    : EndpointCore(Provider::kTcp, o),
      fab_(fab),
      send_cq_(static_cast<SoftCq*>(o.send_cq)),
      recv_cq_(static_cast<SoftCq*>(o.recv_cq)) {}

void TcpEpCore::OnFrame(uint8_t type, uint16_t, std::span<const std::byte> payload,
                        std::vector<UniqueFd>& fds) {
  switch (type) {
    case wire::kFrameTcpReq:
      return Serve(payload);
    case wire::kFrameTcpResp:
      return Complete(payload);
    default:
      if (OnCommonFrame(type, payload, fds)) return;
  }
  ProtocolError("unexpected frame type " + std::to_string(type));
}

void TcpEpCore::ProtocolError(const std::string& what) {
  RDMQ_LOG(kError, "fabric", "tcp protocol error; closing the connection")
      .kv("peer", peer_node_)
      .kv("what", what);
  conn_->Close();
}

bool TcpEpCore::Retire() {
  std::vector<Completion> send_flush, recv_flush;
  {
    MutexLock l(out_mu_);
    if (!alive_.exchange(false)) return false;
    for (const TcpOutstanding& o : outstanding_) {
      send_flush.push_back(MakeCompletion(o.tag, o.opcode, id_, FabricErrc::kPeerGone));
    }
    outstanding_.clear();
  }
  {
    MutexLock l(recv_mu_);
    FlushReceives(posted_, id_, recv_flush);
  }
  if (!send_flush.empty()) send_cq_->PushMany(send_flush);
  if (!recv_flush.empty() && recv_cq_ != nullptr) recv_cq_->PushMany(recv_flush);
  return true;
}

Result<std::unique_ptr<RemoteRegion>> TcpEpCore::Attach(const RegionDescriptor& d) {
  RDMQ_RETURN_IF_ERROR(CheckAttachable(d));
  if (!alive()) return Gone();
  return std::unique_ptr<RemoteRegion>(new UnmappedRemote(d, id_));
}

Result<std::unique_ptr<Grant>> TcpEpCore::GrantAccess(const std::shared_ptr<TcpCore>& fab, Region& region,
                                                      uint64_t offset, uint64_t length, uint32_t access) {
  return GrantKey<TcpRegion>(region, fab.get(), id_, offset, length, access, "tcp");
}

}  // namespace rdmq::fabric::internal
