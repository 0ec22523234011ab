// Server credits: renewal requests arrive as WRITE_WITH_IMM on the shared receive CQ, which the
// channel scheduler thread drains; doorbells (tcp/verbs) arrive the same way.
#include <algorithm>
#include <string>
#include <vector>

#include "rpc/server_impl.h"

namespace rdmq::rpc::internal {

// Takes every receive completion: a credit renewal is granted or refused and answered at once (a
// control message); a doorbell (tcp/verbs: a message landed) wakes a parked dispatcher. Receives
// are reposted for every channel that consumed one; a channel whose receive failed is closed.
void ServerImpl::DrainReceives(std::vector<fabric::Completion>& cs,
                               std::vector<std::shared_ptr<SChannel>>& touched) {
  bool doorbell = false;
  size_t got;
  while ((got = recv_cq_->Poll(cs)) > 0) {
    for (size_t i = 0; i < got; ++i) {
      const fabric::Completion& c = cs[i];
      auto ch = ByEndpoint(c.endpoint_id);
      if (!ch) continue;
      if (c.status) {
        if (!ch->closed.load()) {
          CloseConn(
              ch->client_id,
              "receive on channel " + std::to_string(ch->index) + " failed: " + Status(c.status).ToString(),
              false);
        }
        continue;
      }
      Imm imm;
      if (!c.has_imm || !DecodeImm(c.imm, &imm)) {
        CloseConn(ch->client_id,
                  "channel " + std::to_string(ch->index) + ": unexpected receive without a valid immediate",
                  true);
        continue;
      }
      if (std::find(touched.begin(), touched.end(), ch) == touched.end()) touched.push_back(ch);
      SpinGuard g(ch->mu);
      ++ch->recvs_to_post;
      if (imm.kind == ImmKind::kDoorbell) {
        doorbell = true;
        continue;
      }
      const auto d = ch->credit.OnRenewal(imm.seq, imm.value);
      ch->last_credit_seq = imm.seq;
      (d.granted ? n_.renewals_granted : n_.renewals_refused).fetch_add(1, std::memory_order_relaxed);
      Status st = WriteControl(*ch, true);
      if (!st.ok()) ch->closed.store(true);  // closed properly below
    }
    if (got < cs.size()) break;
  }
  for (auto& ch : touched) {
    bool failed = false;
    {
      SpinGuard g(ch->mu);
      if (ch->recvs_to_post > 0 && !ch->closed.load()) {
        std::vector<fabric::RecvRequest> rr(ch->recvs_to_post);
        failed = !ch->ep->PostRecv(rr).ok();
        ch->recvs_to_post = 0;
      }
      failed |= ch->closed.load();
    }
    if (failed)
      CloseConn(ch->client_id, "channel " + std::to_string(ch->index) + ": posting receives failed", false);
  }
  touched.clear();
  // Dekker with the parking dispatcher: the message landed before its immediate arrived.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (doorbell && LoadAcquire64(wake_region_->data() + kParkedOffset) != 0) WakeDispatcher();
}

}  // namespace rdmq::rpc::internal
