// The server's send path: responses coalesced into messages in the client's response ring, a
// backlog when the ring is full (back-pressure), and control messages (credits, channel state).
#include <vector>

#include "rdmq/common/coding.h"
#include "rpc/server_impl.h"

namespace rdmq::rpc::internal {

bool ServerImpl::ReserveResponse(SChannel& ch, uint64_t len, RingProducer::Placement* pl, Status* err) {
  if (auto p = ch.prod->Reserve(len)) {
    *pl = *p;
    return true;
  }
  // The cached head says full: READ the client's head word, at most every 20 us.
  const auto now = Clock::now();
  if (now - ch.last_head_read < std::chrono::microseconds(20)) return false;
  ch.last_head_read = now;
  WorkRequest rd;
  rd.opcode = Opcode::kRead;
  rd.local = {ch.scratch() + kScratchHead, 8, ch.staging.get()};
  rd.remote = ch.resp_remote.get();
  rd.remote_offset = kHeadOffset;
  *err = ch.sq->ReadSync(rd, now + std::chrono::seconds(5));
  if (!err->ok()) return false;
  if (!ch.prod->UpdateHead(coding::LoadLE<uint64_t>(ch.scratch() + kScratchHead))) {
    *err =
        Status(RpcErrc::kCorruptMessage, "the client's response-ring head is beyond what the server wrote");
    return false;
  }
  if (auto p = ch.prod->Reserve(len)) {
    *pl = *p;
    return true;
  }
  return false;
}

ServerImpl::WriteResult ServerImpl::WriteMessage(SChannel& ch, OutResponse* r, size_t n, bool control,
                                                 bool answer, Status* err) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < n; ++i) bytes += EntryBytes(r[i].data.size());
  const uint64_t len = MessageLength(bytes);
  RingProducer::Placement pl;
  if (!ReserveResponse(ch, len, &pl, err)) return err->ok() ? WriteResult::kNoRoom : WriteResult::kError;
  std::byte* stage = ch.staging->data();
  MessageBuilder mb(stage + pl.offset, static_cast<uint32_t>(len));
  for (size_t i = 0; i < n; ++i) {
    r[i].meta.size = static_cast<uint32_t>(r[i].data.size());
    mb.Add(r[i].meta, std::as_bytes(std::span(r[i].data.data(), r[i].data.size())));
  }
  MessageHeader h;
  h.canary = NextCanary(&ch.canary_state);
  h.flags = static_cast<uint8_t>(kFlagResponse | (ch.credit.active() ? kFlagActive : 0) |
                                 (answer ? kFlagCredit : 0));
  h.position = pl.position;
  h.credit_seq = ch.last_credit_seq;
  h.peer_head = ch.head_pub.load(std::memory_order_acquire);
  h.credit_limit = ch.credit.limit();
  mb.Finish(h);
  if (pl.pad_length > 0) {
    BuildPad(stage + pl.pad_position % ch.resp_ring, pl.pad_length, pl.pad_position,
             NextCanary(&ch.canary_state), kFlagResponse);
  }
  const bool imm = ch.client_wake->mapped() == nullptr;
  WorkRequest wrs[4];
  const size_t nw = MessageWrites(pl, ch.resp_ring, mb.used(), static_cast<uint32_t>(len), *ch.staging,
                                  *ch.resp_remote, kControlPage, imm, wrs);
  *err = ch.sq->Post(std::span<WorkRequest>(wrs, nw));
  if (err->ok() && !imm) {
    bool woke = false;
    *err = RingDoorbellIfParked(*ch.sq, *ch.client_wake, *ch.staging, ch.scratch() + kScratchAtomic, &woke);
    if (woke) woke_client_ = true;
  }
  if (!err->ok()) return WriteResult::kError;
  if (control) {
    ch.control_pending = false;
    ch.answer_pending = false;
  }
  n_.response_messages.fetch_add(1, std::memory_order_relaxed);
  return WriteResult::kOk;
}

Status ServerImpl::SendResponses(SChannel& ch, OutResponse* r, size_t n) {
  if (ch.closed.load(std::memory_order_acquire)) return Status();
  if (ch.has_backlog.load(std::memory_order_relaxed)) {
    for (size_t i = 0; i < n; ++i) ch.backlog.push_back(std::move(r[i]));
    return FlushBacklog(ch);
  }
  const uint64_t max_msg = ch.prod->max_message();
  size_t i = 0;
  while (i < n) {
    uint64_t bytes = 0;
    size_t j = i;
    while (j < n && MessageLength(bytes + EntryBytes(r[j].data.size())) <= max_msg)
      bytes += EntryBytes(r[j++].data.size());
    Status err;
    // A pending credit answer rides on this message.
    const bool answer = ch.answer_pending;
    switch (WriteMessage(ch, r + i, j - i, ch.control_pending, answer, &err)) {
      case WriteResult::kOk:
        i = j;
        break;
      case WriteResult::kNoRoom:
        for (; i < n; ++i) ch.backlog.push_back(std::move(r[i]));
        ch.has_backlog.store(true, std::memory_order_release);
        return Status();
      case WriteResult::kError:
        return err;
    }
  }
  return Status();
}

Status ServerImpl::FlushBacklog(SChannel& ch) {
  if (ch.closed.load(std::memory_order_acquire)) return Status();
  const uint64_t max_msg = ch.prod->max_message();
  while (!ch.backlog.empty()) {
    uint64_t bytes = 0;
    size_t j = 0;
    while (j < ch.backlog.size() && MessageLength(bytes + EntryBytes(ch.backlog[j].data.size())) <= max_msg) {
      bytes += EntryBytes(ch.backlog[j++].data.size());
    }
    std::vector<OutResponse> batch;
    batch.reserve(j);
    for (size_t k = 0; k < j; ++k) batch.push_back(std::move(ch.backlog[k]));
    Status err;
    const WriteResult w =
        WriteMessage(ch, batch.data(), batch.size(), ch.control_pending, ch.answer_pending, &err);
    if (w == WriteResult::kError) return err;
    if (w == WriteResult::kNoRoom) {
      for (size_t k = 0; k < j; ++k) ch.backlog[k] = std::move(batch[k]);
      return Status();
    }
    ch.backlog.erase(ch.backlog.begin(), ch.backlog.begin() + static_cast<std::ptrdiff_t>(j));
  }
  if (ch.control_pending) {
    Status err;
    if (WriteMessage(ch, nullptr, 0, true, ch.answer_pending, &err) == WriteResult::kError) return err;
  }
  if (ch.backlog.empty() && !ch.control_pending) ch.has_backlog.store(false, std::memory_order_release);
  return Status();
}

Status ServerImpl::WriteControl(SChannel& ch, bool answer) {
  ch.control_pending = true;
  ch.answer_pending = ch.answer_pending || answer;
  if (ch.closed.load(std::memory_order_acquire)) return Status();
  if (ch.has_backlog.load(std::memory_order_relaxed)) return FlushBacklog(ch);
  Status err;
  switch (WriteMessage(ch, nullptr, 0, true, ch.answer_pending, &err)) {
    case WriteResult::kOk:
      return Status();
    case WriteResult::kNoRoom:
      ch.has_backlog.store(true, std::memory_order_release);
      WakeDispatcher();  // it flushes backlogs
      return Status();
    case WriteResult::kError:
      return err;
  }
  return Status();
}

}  // namespace rdmq::rpc::internal
