// Completion polling on the verbs provider: the completion queue, and the endpoints' handling of
// the work completions of their QPs.
#include "cq.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "cm.h"
#include "endpoint.h"
#include "fabric/checks.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"

namespace rdmq::fabric::internal {

namespace {
constexpr int kPollBatch = 16;

bool IsRemoteError(ibv_wc_status s) {
  return s == IBV_WC_REM_ACCESS_ERR || s == IBV_WC_REM_OP_ERR || s == IBV_WC_REM_INV_REQ_ERR;
}
}  // namespace

FabricErrc MapWcStatus(ibv_wc_status s, bool peer_gone, Opcode op) {
  const bool message = op == Opcode::kRecv || op == Opcode::kSend || op == Opcode::kWriteImm;
  if (message && (s == IBV_WC_LOC_QP_OP_ERR || s == IBV_WC_REM_OP_ERR)) return FabricErrc::kTooLong;
  switch (s) {
    case IBV_WC_SUCCESS:
      return FabricErrc::kOk_;
    case IBV_WC_WR_FLUSH_ERR:
      return peer_gone ? FabricErrc::kPeerGone : FabricErrc::kFlushed;
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_MW_BIND_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
      return FabricErrc::kAccessDenied;
    case IBV_WC_LOC_LEN_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
      return FabricErrc::kTooLong;
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return FabricErrc::kRnr;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_REM_ABORT_ERR:
    case IBV_WC_RESP_TIMEOUT_ERR:
      return FabricErrc::kPeerGone;
    default:
      return FabricErrc::kProtocol;
  }
}

// ------------------------------------------------------------------------------ the queue

Result<std::unique_ptr<VerbsCq>> VerbsCq::Create(std::shared_ptr<VerbsCore> core, size_t depth) {
  auto q = std::unique_ptr<VerbsCq>(new VerbsCq(std::move(core)));
  q->channel_.reset(ibv_create_comp_channel(q->core_->ctx));
  if (!q->channel_) return CmError("ibv_create_comp_channel");
  ::fcntl(q->channel_->fd, F_SETFL, ::fcntl(q->channel_->fd, F_GETFL) | O_NONBLOCK);
  const int cqe =
      static_cast<int>(std::clamp<size_t>(depth, 16, static_cast<size_t>(q->core_->attr.max_cqe)));
  q->cq_.reset(ibv_create_cq(q->core_->ctx, cqe, nullptr, q->channel_.get(), 0));
  if (!q->cq_) return CmError("ibv_create_cq with " + std::to_string(cqe) + " entries");
  q->event_fd_.Reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!q->event_fd_.valid()) return CmError("eventfd");
  return q;
}

VerbsCq::~VerbsCq() {
  if (unacked_ > 0) ibv_ack_cq_events(cq_.get(), unacked_);
}

void VerbsCq::AddEndpoint(uint32_t qp_num, std::shared_ptr<VerbsEpCore> ep) {
  MutexLock l(mu_);
  eps_[qp_num] = std::move(ep);
}

void VerbsCq::RemoveEndpoint(uint32_t qp_num) {
  MutexLock l(mu_);
  eps_.erase(qp_num);
}

void VerbsCq::Signal() noexcept {
  const uint64_t one = 1;
  (void)!::write(event_fd_.get(), &one, sizeof one);
}

void VerbsCq::PushSoft(const Completion& c) {
  {
    MutexLock l(mu_);
    stash_.push_back(c);
  }
  Signal();
}

bool VerbsCq::Translate(const ibv_wc& wc, Completion* out) {
  auto it = eps_.find(wc.qp_num);
  if (it == eps_.end()) return false;  // a QP that is gone
  if (wc.wr_id & kRecvBit) return it->second->OnRecvCompletion(wc, out);
  return it->second->OnSendCompletion(wc, out);
}

size_t VerbsCq::PollHardware(std::span<Completion> out, size_t n, bool until_empty) {
  while (until_empty || n < out.size()) {
    ibv_wc wc[kPollBatch];
    const int got = ibv_poll_cq(cq_.get(), kPollBatch, wc);
    if (got <= 0) break;
    for (int i = 0; i < got; ++i) {
      Completion c;
      if (!Translate(wc[i], &c)) continue;
      if (n < out.size()) {
        out[n++] = c;
      } else {
        stash_.push_back(c);
      }
    }
  }
  return n;
}

bool VerbsCq::StashHardware() {
  const size_t before = stash_.size();
  PollHardware({}, 0, true);
  return stash_.size() > before;
}

size_t VerbsCq::Poll(std::span<Completion> out) {
  MutexLock l(mu_);
  size_t n = 0;
  while (n < out.size() && !stash_.empty()) {
    out[n++] = stash_.front();
    stash_.pop_front();
  }
  return PollHardware(out, n, false);
}

void VerbsCq::Progress() {
  bool stashed;
  {
    MutexLock l(mu_);
    stashed = StashHardware();
  }
  if (stashed) Signal();
}

Status VerbsCq::Wait(std::chrono::nanoseconds timeout) {
  {
    MutexLock l(mu_);
    if (!stash_.empty()) return Status::Ok();
  }
  if (ibv_req_notify_cq(cq_.get(), 0) != 0) return CmError("ibv_req_notify_cq");
  // Anything that arrived before the notification was armed.
  {
    MutexLock l(mu_);
    StashHardware();
    if (!stash_.empty()) return Status::Ok();
  }
  pollfd p[2] = {{channel_->fd, POLLIN, 0}, {event_fd_.get(), POLLIN, 0}};
  const int ms = static_cast<int>(std::max<int64_t>(0, (timeout.count() + 999'999) / 1'000'000));
  int rc;
  do {
    rc = ::poll(p, 2, ms);
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) return Status(Errc::kTimeout, "completion queue wait");
  if (p[0].revents & POLLIN) {
    ibv_cq* cq;
    void* ctx;
    if (ibv_get_cq_event(channel_.get(), &cq, &ctx) == 0) {
      if (++unacked_ >= 64) {
        ibv_ack_cq_events(cq_.get(), unacked_);
        unacked_ = 0;
      }
    }
  }
  if (p[1].revents & POLLIN) {
    uint64_t v;
    (void)!::read(event_fd_.get(), &v, sizeof v);
  }
  return Status::Ok();
}

// ------------------------------------------------------------------------------ the endpoints' side

void VerbsEpCore::NoteFailure(ibv_wc_status status) {
  failure_status_.store(status, std::memory_order_relaxed);
  failed_.store(true, std::memory_order_release);
}

bool VerbsEpCore::OnSendCompletion(const ibv_wc& wc, Completion* out) {
  const uint64_t seq = wc.wr_id;
  SendSlot& s = send_slots_[seq % send_slots_.size()];
  const uint64_t done = send_done_.load(std::memory_order_relaxed);
  if (seq + 1 > done) send_done_.store(seq + 1, std::memory_order_release);
  if (wc.status != IBV_WC_SUCCESS && wc.status != IBV_WC_WR_FLUSH_ERR) {
    NoteFailure(wc.status);
    RDMQ_LOG(kInfo, "fabric", "work request failed; the connection is now in error")
        .kv("peer", peer_node_)
        .kv("opcode", OpcodeName(s.opcode))
        .kv("status", ibv_wc_status_str(wc.status));
  }
  if (s.internal) {
    s.internal->status = wc.status;
    s.internal->state.store(1, std::memory_order_release);
    s.internal.reset();
    return false;
  }
  FabricErrc e = MapWcStatus(wc.status, !alive(), s.opcode);
  if (e == FabricErrc::kOk_ && !s.user_signaled) return false;
  if (IsRemoteError(wc.status) && PeerVanished()) e = FabricErrc::kPeerGone;  // a forced signal
  *out = MakeCompletion(s.tag, s.opcode, id_, e);
  if (e == FabricErrc::kOk_) {
    if (s.opcode == Opcode::kRead) out->byte_len = s.length;
    if (IsAtomic(s.opcode)) out->byte_len = 8;
  }
  return true;
}

bool VerbsEpCore::OnRecvCompletion(const ibv_wc& wc, Completion* out) {
  const uint64_t seq = wc.wr_id & ~kRecvBit;
  const uint64_t tag = recv_tags_[seq % recv_tags_.size()];
  recv_done_.store(seq + 1, std::memory_order_release);
  const FabricErrc e = MapWcStatus(wc.status, !alive(), Opcode::kRecv);
  if (wc.status != IBV_WC_SUCCESS && wc.status != IBV_WC_WR_FLUSH_ERR) {
    NoteFailure(wc.status);
    RDMQ_LOG(kWarn, "fabric", "receive failed; the connection is now in error")
        .kv("peer", peer_node_)
        .kv("status", ibv_wc_status_str(wc.status))
        .kv("vendor_err", wc.vendor_err);
  }
  *out = MakeCompletion(tag, Opcode::kRecv, id_, e);
  if (e == FabricErrc::kOk_) {
    out->byte_len = wc.byte_len;
    if (wc.wc_flags & IBV_WC_WITH_IMM) {
      out->has_imm = true;
      out->imm = ntohl(wc.imm_data);
    }
  }
  return true;
}

bool VerbsEpCore::PeerVanished() {
  const uint64_t deadline = MonoNanos() + 100'000'000ULL;
  for (;;) {
    if (!alive()) return true;
    if (conn_) {
      pollfd p{conn_->fd(), POLLRDHUP, 0};
      if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) return true;
    }
    if (MonoNanos() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace rdmq::fabric::internal
