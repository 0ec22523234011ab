// The tcp initiator side: a batch of work requests leaves in one socket write; each response
// completes the oldest outstanding operation. Receives match arrivals or wait for them.
#include <cstring>

#include "endpoint.h"

namespace rdmq::fabric::internal {

Status TcpEpCore::Post(std::span<const WorkRequest> wrs) {
  for (const WorkRequest& wr : wrs) RDMQ_RETURN_IF_ERROR(CheckPostable(wr));
  // Frame headers live in `scratch`; payloads are gathered from the callers' buffers.
  constexpr size_t kHdr = kFrameHeaderSize + wire::kTcpRequestHeader;
  scratch_.resize(wrs.size() * kHdr);
  iov_.clear();
  {
    MutexLock l(out_mu_);
    if (!alive()) return Gone();
    if (outstanding_.size() + wrs.size() > max_send_) {
      return QueueFull(outstanding_.size(), max_send_, "operations outstanding");
    }
    for (size_t i = 0; i < wrs.size(); ++i) {
      const WorkRequest& wr = wrs[i];
      wire::TcpRequest r;
      r.opcode = static_cast<uint8_t>(wr.opcode);
      r.seq = next_seq_++;
      const bool carries =
          wr.opcode == Opcode::kWrite || wr.opcode == Opcode::kWriteImm || wr.opcode == Opcode::kSend;
      r.length = static_cast<uint32_t>(wr.local.length);
      if (wr.opcode != Opcode::kSend) {
        r.key = wr.remote->descriptor().key;
        r.offset = wr.remote_offset;
      }
      r.imm = wr.imm;
      r.operand = wr.operand;
      r.swap = wr.swap;
      if (IsAtomic(wr.opcode)) r.length = 0;
      std::byte* h = scratch_.data() + i * kHdr;
      Conn::EncodeHeader(h, static_cast<uint32_t>(wire::kTcpRequestHeader + (carries ? r.length : 0)),
                         wire::kFrameTcpReq, 0, 0);
      wire::EncodeTcpRequest(h + kFrameHeaderSize, r);
      iov_.push_back(iovec{h, kHdr});
      if (carries && r.length > 0) iov_.push_back(iovec{wr.local.addr, r.length});
      outstanding_.push_back(TcpOutstanding{r.seq, wr.tag, wr.opcode, wr.signaled, wr.local.addr,
                                            static_cast<uint32_t>(wr.local.length)});
    }
  }
  // A failed send shuts the connection down; OnClosed then flushes what was just queued.
  // Payloads are borrowed, not copied, when the socket cannot take them at once: a posted
  // WRITE's buffer stays untouched until its completion (which needs the peer's answer).
  (void)conn_->SendFramed(iov_, /*borrow=*/true);
  return Status::Ok();
}

void TcpEpCore::Complete(std::span<const std::byte> frame) {
  auto resp = wire::DecodeTcpResponse(frame);
  if (!resp.ok()) return ProtocolError(resp.status().ToString());
  Finish(*resp, frame.data() + wire::kTcpResponseHeader);
}

void TcpEpCore::Finish(const wire::TcpResponse& resp, const std::byte* data) {
  MutexLock l(out_mu_);
  if (outstanding_.empty() || outstanding_.front().seq != resp.seq) {
    return ProtocolError("response " + std::to_string(resp.seq) + " does not match the oldest request");
  }
  const TcpOutstanding o = outstanding_.front();
  outstanding_.pop_front();
  const auto e = static_cast<FabricErrc>(resp.errc);
  uint32_t byte_len = 0;
  if (e == FabricErrc::kOk_) {
    if (o.opcode == Opcode::kRead) {
      if (resp.length != o.length) return ProtocolError("READ response of the wrong length");
      if (o.length && data != nullptr) std::memcpy(o.local, data, o.length);
      byte_len = o.length;
    } else if (IsAtomic(o.opcode)) {
      if (o.local) std::memcpy(o.local, &resp.value, 8);
      byte_len = 8;
    }
  }
  if (o.signaled || e != FabricErrc::kOk_) send_cq_->Push(MakeCompletion(o.tag, o.opcode, id_, e, byte_len));
}

Status TcpEpCore::PostRecv(std::span<const RecvRequest> rrs) {
  RDMQ_RETURN_IF_ERROR(ValidateRecvRequests(recv_cq_, rrs));
  std::vector<Completion> matched;
  {
    MutexLock l(recv_mu_);
    if (!alive()) return Gone();
    if (posted_.size() + rrs.size() > max_recv_)
      return QueueFull(posted_.size(), max_recv_, "receives already posted");
    for (const RecvRequest& rr : rrs) {
      if (!arrivals_.empty()) {
        matched.push_back(Match(rr, arrivals_.front()));
        arrivals_.pop_front();
      } else {
        posted_.push_back(rr);
      }
    }
  }
  if (!matched.empty()) recv_cq_->PushMany(matched);
  return Status::Ok();
}

}  // namespace rdmq::fabric::internal
