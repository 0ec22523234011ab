// shm data path: work requests are carried out at post time by the posting thread (copies and
// CPU atomics on the attached window, notifications into the peer's mailbox); receives are
// matched with mailbox entries when the receive completion queue is polled.
#include <cstring>
#include <iterator>

#include "endpoint.h"
#include "rdmq/common/log.h"

namespace rdmq::fabric::internal {

// ------------------------------------------------------------------------------ posting

FabricErrc ShmEpCore::Execute(const WorkRequest& wr, bool* rang) {
  switch (wr.opcode) {
    case Opcode::kSend: {
      const auto len = static_cast<uint32_t>(wr.local.length);
      uint64_t pad;
      const size_t need = wire::MailboxEntryTotal(wire::kEntrySend, len);
      if (FabricErrc e = outbox_.Reserve(need, &pad); e != FabricErrc::kOk_) return e;
      outbox_.Publish(wire::kEntrySend, 0, 0, wr.local.addr, len, pad);
      *rang = true;
      return FabricErrc::kOk_;
    }
    case Opcode::kWrite:
    case Opcode::kWriteImm:
    case Opcode::kRead:
    case Opcode::kFetchAdd:
    case Opcode::kCompareSwap:
      return ExecuteOneSided(wr, *static_cast<const ShmRemote*>(wr.remote), rang);
    default:
      return FabricErrc::kProtocol;
  }
}

FabricErrc ShmEpCore::ExecuteOneSided(const WorkRequest& wr, const ShmRemote& r, bool* rang) {
  if (!r.Valid()) return FabricErrc::kRevoked;
  const FabricErrc check = r.Check(wr.opcode, wr.remote_offset, TargetLength(wr));
  if (check != FabricErrc::kOk_) return check;
  const auto len = static_cast<uint32_t>(wr.local.length);
  std::byte* target = r.at(wr.remote_offset);
  switch (wr.opcode) {
    case Opcode::kWrite:
      if (len) std::memcpy(target, wr.local.addr, len);
      std::atomic_thread_fence(std::memory_order_release);
      return FabricErrc::kOk_;
    case Opcode::kWriteImm: {
      uint64_t pad;
      const size_t need = wire::MailboxEntryTotal(wire::kEntryWriteImm, 0);
      if (FabricErrc e = outbox_.Reserve(need, &pad); e != FabricErrc::kOk_) return e;
      if (len) std::memcpy(target, wr.local.addr, len);
      outbox_.Publish(wire::kEntryWriteImm, wire::kEntryFlagImm, wr.imm, nullptr, len, pad);
      *rang = true;
      return FabricErrc::kOk_;
    }
    case Opcode::kRead:
      std::atomic_thread_fence(std::memory_order_acquire);
      if (len) std::memcpy(wr.local.addr, target, len);
      return FabricErrc::kOk_;
    case Opcode::kFetchAdd: {
      const uint64_t old = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(target))
                               .fetch_add(wr.operand, std::memory_order_acq_rel);
      if (wr.local.addr) std::memcpy(wr.local.addr, &old, 8);
      return FabricErrc::kOk_;
    }
    default: {
      uint64_t expected = wr.operand;
      std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(target))
          .compare_exchange_strong(expected, wr.swap, std::memory_order_acq_rel);
      if (wr.local.addr) std::memcpy(wr.local.addr, &expected, 8);
      return FabricErrc::kOk_;
    }
  }
}

Status ShmEpCore::Post(std::span<const WorkRequest> wrs) {
  if (!alive()) return Gone();
  for (const WorkRequest& wr : wrs) RDMQ_RETURN_IF_ERROR(CheckPostable(wr));
  Completion local[32];
  size_t nlocal = 0;
  bool rang = false;
  for (const WorkRequest& wr : wrs) {
    const FabricErrc e = Execute(wr, &rang);
    if (e != FabricErrc::kOk_ || wr.signaled) {
      uint32_t byte_len = 0;
      if (e == FabricErrc::kOk_) {
        byte_len = wr.opcode == Opcode::kRead ? static_cast<uint32_t>(wr.local.length)
                   : IsAtomic(wr.opcode)      ? 8
                                              : 0;
      }
      local[nlocal++] = MakeCompletion(wr.tag, wr.opcode, id_, e, byte_len);
      if (nlocal == std::size(local)) {
        send_cq_->PushMany(std::span<const Completion>(local, nlocal));
        nlocal = 0;
      }
    }
  }
  if (rang) outbox_.Ring();
  if (nlocal) send_cq_->PushMany(std::span<const Completion>(local, nlocal));
  return Status::Ok();
}

Status ShmEpCore::PostRecv(std::span<const RecvRequest> rrs) {
  RDMQ_RETURN_IF_ERROR(ValidateRecvRequests(recv_cq_, rrs));
  {
    MutexLock l(recv_mu_);
    if (closed()) return Status(FabricErrc::kPeerGone, "endpoint closed");
    if (posted_.size() + rrs.size() > max_recv_)
      return QueueFull(posted_.size(), max_recv_, "receives already posted");
    posted_.insert(posted_.end(), rrs.begin(), rrs.end());
    posted_count_.fetch_add(rrs.size(), std::memory_order_release);
  }
  recv_cq_->Ring();
  return Status::Ok();
}

// ------------------------------------------------------------------------------ receiving

bool ShmEpCore::Ready() const noexcept {
  if (posted_count_.load(std::memory_order_acquire) == 0) return false;
  if (!alive()) return true;
  return inbox_.HasEntries();
}

Completion ShmEpCore::Receive(const RecvRequest& rr, const wire::MailboxEntry& e) const {
  Completion c = MakeCompletion(rr.tag, Opcode::kRecv, id_);
  if (e.flags & wire::kEntryFlagImm) {
    c.imm = e.imm;
    c.has_imm = true;
  }
  if (e.kind == wire::kEntrySend) {
    if (e.length > rr.buffer.length) {
      c.status = make_error_code(FabricErrc::kTooLong);
    } else {
      std::memcpy(rr.buffer.addr, inbox_.Payload(), e.length);
      c.byte_len = e.length;
    }
  } else {
    c.byte_len = e.length;
  }
  return c;
}

size_t ShmEpCore::Drain(std::span<Completion> out) {
  size_t n = 0;
  MutexLock l(recv_mu_);
  while (n < out.size() && !posted_.empty()) {
    const uint64_t tail = inbox_.Tail();
    if (tail == inbox_.head()) {
      if (alive()) break;
      // Peer gone and nothing left to deliver: flush posted receives.
      while (n < out.size() && !posted_.empty()) {
        out[n++] = MakeCompletion(posted_.front().tag, Opcode::kRecv, id_, FabricErrc::kPeerGone);
        posted_.pop_front();
        posted_count_.fetch_sub(1, std::memory_order_release);
      }
      break;
    }
    auto e = inbox_.Entry(tail);
    if (!e.ok()) {
      RDMQ_LOG(kError, "fabric", "corrupt shm mailbox; closing the endpoint")
          .kv("peer", peer_node_)
          .kv("error", e.status());
      inbox_.Discard();
      if (conn_) conn_->Close();
      alive_.store(false, std::memory_order_release);
      continue;
    }
    if (e->kind != wire::kEntryPad) {
      const RecvRequest rr = posted_.front();
      posted_.pop_front();
      posted_count_.fetch_sub(1, std::memory_order_release);
      out[n++] = Receive(rr, *e);
    }
    inbox_.Consume(e->total);
  }
  return n;
}

}  // namespace rdmq::fabric::internal
