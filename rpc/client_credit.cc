// Client credits: renewal requests (WRITE_WITH_IMM) and the channel state (credit limit, active)
// that the server piggybacks on response messages.
#include "rdmq/common/coding.h"
#include "rpc/client_impl.h"

namespace rdmq::rpc::internal {

bool ClientImpl::RenewalDue(Channel& ch, WorkRequest* wr) {
  std::optional<Renewal> renewal;
  uint64_t sent = 0;
  {
    SpinGuard g(ch.credit_mu);
    renewal = ch.credit.MaybeRenew();
    sent = ch.credit.sent();
  }
  if (!renewal) return false;
  coding::StoreLE<uint64_t>(ch.scratch() + kScratchRenewal, sent);
  *wr = WorkRequest{};
  wr->opcode = Opcode::kWriteImm;
  wr->tag = kTagOther;
  wr->signaled = false;
  wr->local = {ch.scratch() + kScratchRenewal, 8, ch.staging.get()};
  wr->remote = ch.req_remote.get();
  wr->remote_offset = kRenewalOffset;
  wr->imm = EncodeImm({ImmKind::kCreditRenewal, renewal->seq, renewal->degree_x16});
  return true;
}

void ClientImpl::OnServerState(Channel& ch, const MessageHeader& h) {
  bool was_active = true, now_active = true;
  uint64_t before = 0, after = 0;
  {
    SpinGuard g(ch.credit_mu);
    was_active = ch.credit.active();
    before = ch.credit.limit();
    ch.credit.OnServerState(h.credit_limit, (h.flags & kFlagActive) != 0, (h.flags & kFlagCredit) != 0,
                            h.credit_seq);
    now_active = ch.credit.active();
    after = ch.credit.limit();
  }
  if (was_active == now_active && after == before) return;
  ch.active.store(now_active, std::memory_order_release);
  ch.credit_event.Notify();
  if (was_active != now_active) {
    if (now_active) {
      n_.activations.fetch_add(1, std::memory_order_relaxed);
    } else {
      n_.refusals.fetch_add(1, std::memory_order_relaxed);
    }
    sched_event_.Notify();
  }
}

}  // namespace rdmq::rpc::internal
