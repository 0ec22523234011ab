#include "endpoint.h"

#include <algorithm>
#include <thread>

#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"

namespace rdmq::fabric::internal {

VerbsEpCore::VerbsEpCore(VerbsCore& fab, const EndpointOptions& o)
    : EndpointCore(Provider::kVerbs, o),
      fab_(fab),
      send_cq_(static_cast<VerbsCq*>(o.send_cq)),
      recv_cq_(static_cast<VerbsCq*>(o.recv_cq)),
      want_inline_(o.max_inline),
      send_slots_(o.max_send_wr + kInternalReserve),
      recv_tags_(std::max<uint32_t>(o.max_recv_wr, 1)) {}

void VerbsEpCore::OnFrame(uint8_t type, uint16_t, std::span<const std::byte> payload,
                          std::vector<UniqueFd>& fds) {
  if (OnCommonFrame(type, payload, fds)) return;
  RDMQ_LOG(kWarn, "fabric", "unexpected verbs bootstrap frame").kv("type", type).kv("peer", peer_node_);
}

Status VerbsEpCore::CheckUsable() const {
  if (!alive()) return Gone();
  if (failed_.load(std::memory_order_acquire)) {
    return Status(FabricErrc::kFlushed,
                  "verbs endpoint to " + peer_node_ + " failed after an error completion (" +
                      ibv_wc_status_str(static_cast<ibv_wc_status>(failure_status_.load())) + ")");
  }
  return Status::Ok();
}

Result<std::unique_ptr<RemoteRegion>> VerbsEpCore::Attach(const RegionDescriptor& d) {
  RDMQ_RETURN_IF_ERROR(CheckAttachable(d));
  if (d.key > UINT32_MAX) return Status(FabricErrc::kBadKey, "verbs keys are 32-bit rkeys");
  RDMQ_RETURN_IF_ERROR(CheckUsable());
  return std::unique_ptr<RemoteRegion>(new UnmappedRemote(d, id_));
}

void VerbsEpCore::AfterGone() {
  if (qp_ != nullptr) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(qp_, &a, IBV_QP_STATE);
  }
}

bool VerbsEpCore::Outstanding() {
  uint64_t sent, received;
  {
    MutexLock l(post_mu_);
    sent = send_seq_;
  }
  {
    MutexLock l(recv_mu_);
    received = recv_seq_;
  }
  return sent != send_done_.load() || received != recv_done_.load();
}

void VerbsEpCore::AfterClose() {
  if (cm_id_) rdma_disconnect(cm_id_.get());
  if (qp_ != nullptr) {
    // Let the flushes of everything outstanding reach the completion queues (as kPeerGone
    // completions for the user), then forget this QP there.
    const uint64_t deadline = MonoNanos() + 2'000'000'000ULL;
    while (MonoNanos() < deadline && Outstanding()) {
      send_cq_->Progress();
      if (recv_cq_ != nullptr && recv_cq_ != send_cq_) recv_cq_->Progress();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    send_cq_->RemoveEndpoint(qp_num_);
    if (recv_cq_ != nullptr && recv_cq_ != send_cq_) recv_cq_->RemoveEndpoint(qp_num_);
  }
  cm_id_.reset();  // destroys the QP and the rdma_cm id
  cm_channel_.reset();
}

}  // namespace rdmq::fabric::internal
