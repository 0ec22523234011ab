// Posting on the verbs provider: a batch of work requests becomes one linked list and one
// ibv_post_send, after every request was checked (a malformed one posts nothing; one the
// attached descriptor does not allow completes at once with a software error, keeping the QP).
#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "cm.h"
#include "endpoint.h"
#include "rdmq/common/clock.h"

namespace rdmq::fabric::internal {

Result<uint32_t> VerbsEpCore::LocalKey(const LocalBuffer& b) const {
  const VerbsRegion* r = b.region != nullptr ? dynamic_cast<const VerbsRegion*>(b.region) : nullptr;
  if (r == nullptr) r = fab_.FindRegion(b.addr, b.length);
  if (r == nullptr || r->core() != &fab_) {
    return Status(Errc::kInvalidArgument,
                  "local buffer is not in a region registered with this verbs fabric");
  }
  const auto* p = static_cast<const std::byte*>(b.addr);
  if (p < r->data() || p + b.length > r->data() + r->size()) {
    return Status(Errc::kInvalidArgument, "local buffer runs outside its region");
  }
  return r->mr()->lkey;
}

Status VerbsEpCore::Post(std::span<const WorkRequest> wrs) {
  RDMQ_RETURN_IF_ERROR(CheckUsable());
  // Validate everything first: a malformed request posts nothing.
  prepared_.resize(wrs.size());
  size_t hw = 0;
  for (size_t i = 0; i < wrs.size(); ++i) {
    const WorkRequest& wr = wrs[i];
    RDMQ_RETURN_IF_ERROR(CheckPostable(wr));
    FabricErrc refused = FabricErrc::kOk_;
    if (wr.opcode != Opcode::kSend) {
      const RegionDescriptor& d = wr.remote->descriptor();
      refused = CheckAccess(wr.opcode, d.access, d.length, wr.remote_offset, TargetLength(wr),
                            d.base + wr.remote_offset);
    }
    uint32_t lkey = 0;
    const bool is_inline =
        (wr.opcode == Opcode::kWrite || wr.opcode == Opcode::kWriteImm || wr.opcode == Opcode::kSend) &&
        wr.local.length <= max_inline_;
    const bool atomic = IsAtomic(wr.opcode);
    if (refused == FabricErrc::kOk_ && !is_inline && wr.local.length > 0 &&
        !(atomic && wr.local.addr == nullptr)) {
      LocalBuffer b = wr.local;
      if (atomic) b.length = 8;
      RDMQ_ASSIGN_OR_RETURN(lkey, LocalKey(b));
    }
    prepared_[i] = {refused, lkey};
    if (refused == FabricErrc::kOk_) ++hw;
  }
  MutexLock l(post_mu_);
  const uint64_t outstanding = send_seq_ - send_done_.load(std::memory_order_acquire);
  if (outstanding + hw > max_send_) {
    return QueueFull(outstanding, max_send_, "work requests outstanding", "; poll the send completion queue");
  }
  wr_.resize(hw);
  sge_.resize(hw);
  size_t k = 0;
  for (size_t i = 0; i < wrs.size(); ++i) {
    const WorkRequest& wr = wrs[i];
    if (prepared_[i].refused != FabricErrc::kOk_) {
      send_cq_->PushSoft(MakeCompletion(wr.tag, wr.opcode, id_, prepared_[i].refused));
      continue;
    }
    const uint64_t seq = send_seq_ + k;
    send_slots_[seq % send_slots_.size()] =
        SendSlot{wr.tag, wr.opcode, wr.signaled, static_cast<uint32_t>(wr.local.length), nullptr};
    BuildSendWr(wr, k, seq, prepared_[i].lkey, k + 1 == hw);
    ++k;
  }
  if (hw == 0) return Status::Ok();
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(qp_, wr_.data(), &bad); rc != 0) {
    // Nothing of the list beyond `bad` was posted; account for what was.
    const size_t posted = bad ? static_cast<size_t>(bad - wr_.data()) : 0;
    send_seq_ += posted;
    errno = rc;
    return CmError("ibv_post_send (" + std::to_string(posted) + " of " + std::to_string(hw) + " posted)");
  }
  send_seq_ += hw;
  return Status::Ok();
}

void VerbsEpCore::BuildSendWr(const WorkRequest& wr, size_t k, uint64_t seq, uint32_t lkey, bool last) {
  ibv_send_wr& s = wr_[k];
  s = ibv_send_wr{};
  s.wr_id = seq;
  s.next = last ? nullptr : &wr_[k + 1];
  ibv_sge& g = sge_[k];
  g.addr = reinterpret_cast<uint64_t>(wr.local.addr);
  g.length = static_cast<uint32_t>(wr.local.length);
  g.lkey = lkey;
  s.sg_list = &g;
  s.num_sge = wr.local.length > 0 ? 1 : 0;
  const uint64_t raddr = wr.opcode == Opcode::kSend ? 0 : wr.remote->descriptor().base + wr.remote_offset;
  const uint32_t rkey = wr.opcode == Opcode::kSend ? 0 : static_cast<uint32_t>(wr.remote->descriptor().key);
  switch (wr.opcode) {
    case Opcode::kWrite:
      s.opcode = IBV_WR_RDMA_WRITE;
      break;
    case Opcode::kWriteImm:
      s.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      s.imm_data = htonl(wr.imm);
      break;
    case Opcode::kRead:
      s.opcode = IBV_WR_RDMA_READ;
      break;
    case Opcode::kSend:
      s.opcode = IBV_WR_SEND;
      break;
    case Opcode::kFetchAdd:
    case Opcode::kCompareSwap:
      s.opcode = wr.opcode == Opcode::kFetchAdd ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP;
      s.wr.atomic.remote_addr = raddr;
      s.wr.atomic.rkey = rkey;
      s.wr.atomic.compare_add = wr.operand;
      s.wr.atomic.swap = wr.swap;
      g.length = 8;
      s.num_sge = 1;
      if (wr.local.addr == nullptr) {
        g.addr = reinterpret_cast<uint64_t>(scratch_);
        g.lkey = scratch_mr_->lkey;
      }
      break;
    default:
      break;
  }
  if (s.opcode == IBV_WR_RDMA_WRITE || s.opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
      s.opcode == IBV_WR_RDMA_READ) {
    s.wr.rdma.remote_addr = raddr;
    s.wr.rdma.rkey = rkey;
  }
  if ((s.opcode == IBV_WR_RDMA_WRITE || s.opcode == IBV_WR_RDMA_WRITE_WITH_IMM || s.opcode == IBV_WR_SEND) &&
      wr.local.length > 0 && wr.local.length <= max_inline_) {
    s.send_flags |= IBV_SEND_INLINE;
  }
  // Selective signalling: the user's choice, plus a forced signal at least every half queue
  // so that slots are recycled even when the user signals nothing.
  if (wr.signaled || ++unsignaled_run_ >= std::max<uint32_t>(1, max_send_ / 2)) {
    s.send_flags |= IBV_SEND_SIGNALED;
    unsignaled_run_ = 0;
  }
}

Status VerbsEpCore::RunInternal(ibv_send_wr wr, const std::string& what) {
  auto op = std::make_shared<InternalOp>();
  {
    MutexLock l(post_mu_);
    RDMQ_RETURN_IF_ERROR(CheckUsable());
    if (send_seq_ - send_done_.load(std::memory_order_acquire) >= max_send_ + kInternalReserve) {
      return Status(FabricErrc::kQueueFull, what + ": send queue full");
    }
    const uint64_t seq = send_seq_;
    send_slots_[seq % send_slots_.size()] = SendSlot{0, Opcode::kWrite, false, 0, op};
    wr.wr_id = seq;
    wr.next = nullptr;
    wr.send_flags |= IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    if (const int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) {
      send_slots_[seq % send_slots_.size()].internal.reset();
      errno = rc;
      return CmError(what + ": ibv_post_send");
    }
    ++send_seq_;
    unsignaled_run_ = 0;
  }
  const uint64_t deadline = MonoNanos() + 10'000'000'000ULL;
  while (op->state.load(std::memory_order_acquire) == 0) {
    if (MonoNanos() > deadline) return Status(Errc::kTimeout, what + ": no completion within 10 s");
    send_cq_->Progress();
    if (op->state.load(std::memory_order_acquire) == 0)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (op->status != IBV_WC_SUCCESS) {
    return Status(MapWcStatus(op->status, !alive(), Opcode::kWrite),
                  what + ": " + ibv_wc_status_str(op->status));
  }
  return Status::Ok();
}

Status VerbsEpCore::PostRecv(std::span<const RecvRequest> rrs) {
  if (recv_cq_ == nullptr) return Status(Errc::kInvalidArgument, "endpoint has no receive completion queue");
  RDMQ_RETURN_IF_ERROR(CheckUsable());
  MutexLock l(recv_mu_);
  const uint64_t outstanding = recv_seq_ - recv_done_.load(std::memory_order_acquire);
  if (outstanding + rrs.size() > max_recv_)
    return QueueFull(outstanding, max_recv_, "receives already posted");
  std::vector<ibv_recv_wr> wrs(rrs.size());
  std::vector<ibv_sge> sges(rrs.size());
  for (size_t i = 0; i < rrs.size(); ++i) {
    const RecvRequest& rr = rrs[i];
    uint32_t lkey = 0;
    if (rr.buffer.length > 0) {
      RDMQ_RETURN_IF_ERROR(ValidateRecvRequest(rr));
      RDMQ_ASSIGN_OR_RETURN(lkey, LocalKey(rr.buffer));
    }
    const uint64_t seq = recv_seq_ + i;
    recv_tags_[seq % recv_tags_.size()] = rr.tag;
    sges[i] =
        ibv_sge{reinterpret_cast<uint64_t>(rr.buffer.addr), static_cast<uint32_t>(rr.buffer.length), lkey};
    wrs[i].wr_id = kRecvBit | seq;
    wrs[i].sg_list = &sges[i];
    wrs[i].num_sge = rr.buffer.length > 0 ? 1 : 0;
    wrs[i].next = i + 1 < rrs.size() ? &wrs[i + 1] : nullptr;
  }
  if (rrs.empty()) return Status::Ok();
  ibv_recv_wr* bad = nullptr;
  if (const int rc = ibv_post_recv(qp_, wrs.data(), &bad); rc != 0) {
    const size_t posted = bad ? static_cast<size_t>(bad - wrs.data()) : 0;
    recv_seq_ += posted;
    errno = rc;
    return CmError("ibv_post_recv");
  }
  recv_seq_ += rrs.size();
  return Status::Ok();
}

}  // namespace rdmq::fabric::internal
