// The tcp target side, on the agent thread: requests from the peer are checked against the key
// table and applied to registered memory, each answered by one response in order; SENDs and
// immediates become arrivals matched with posted receives.
#include <atomic>
#include <cstring>

#include "endpoint.h"
#include "rdmq/common/coding.h"

namespace rdmq::fabric::internal {

void TcpEpCore::Serve(std::span<const std::byte> frame) {
  auto req = wire::DecodeTcpRequest(frame);
  if (!req.ok()) return ProtocolError(req.status().ToString());
  const std::span<const std::byte> data = frame.subspan(wire::kTcpRequestHeader);
  wire::TcpResponse resp;
  resp.seq = req->seq;
  FabricErrc e = FabricErrc::kOk_;
  switch (static_cast<Opcode>(req->opcode)) {
    case Opcode::kWrite:
      e = ApplyWrite(*req, data);
      break;
    case Opcode::kWriteImm:
      // The immediate needs a receive (posted or queued) before any byte moves.
      if (!HasRoomForArrival()) {
        e = FabricErrc::kRnr;
        break;
      }
      e = ApplyWrite(*req, data);
      if (e == FabricErrc::kOk_)
        Deliver(TcpArrival{true, req->imm, static_cast<uint32_t>(data.size()), false, {}});
      break;
    case Opcode::kSend:
      if (!HasRoomForArrival()) {
        e = FabricErrc::kRnr;
        break;
      }
      Deliver(
          TcpArrival{false, 0, static_cast<uint32_t>(data.size()), true, std::string(coding::AsChars(data))});
      break;
    case Opcode::kRead:
      if (AnswerRead(*req, &e)) return;
      break;
    case Opcode::kFetchAdd:
    case Opcode::kCompareSwap: {
      const auto op = static_cast<Opcode>(req->opcode);
      e = fab_.WithKey(req->key, id_, op, req->offset, 8, [&](std::byte* p) {
        std::atomic_ref<uint64_t> word(*reinterpret_cast<uint64_t*>(p));
        if (op == Opcode::kFetchAdd) {
          resp.value = word.fetch_add(req->operand, std::memory_order_acq_rel);
        } else {
          uint64_t expected = req->operand;
          word.compare_exchange_strong(expected, req->swap, std::memory_order_acq_rel);
          resp.value = expected;
        }
      });
      break;
    }
    default:
      return ProtocolError("unknown opcode");
  }
  resp.errc = static_cast<uint32_t>(e);
  resp.length = 0;
  Respond(resp);
}

FabricErrc TcpEpCore::ApplyWrite(const wire::TcpRequest& req, std::span<const std::byte> data) {
  return fab_.WithKey(req.key, id_, static_cast<Opcode>(req.opcode), req.offset, data.size(),
                      [&](std::byte* p) {
                        if (!data.empty()) std::memcpy(p, data.data(), data.size());
                        std::atomic_thread_fence(std::memory_order_release);
                      });
}

bool TcpEpCore::AnswerRead(const wire::TcpRequest& req, FabricErrc* e) {
  bool sent = false;
  *e = fab_.WithKey(req.key, id_, Opcode::kRead, req.offset, req.length, [&](std::byte* p) {
    std::atomic_thread_fence(std::memory_order_acquire);
    wire::TcpResponse resp;
    resp.seq = req.seq;
    resp.length = req.length;
    std::byte hdr[kFrameHeaderSize + wire::kTcpResponseHeader];
    Conn::EncodeHeader(hdr, static_cast<uint32_t>(wire::kTcpResponseHeader + resp.length),
                       wire::kFrameTcpResp, 0, 0);
    wire::EncodeTcpResponse(hdr + kFrameHeaderSize, resp);
    const iovec parts[2] = {{hdr, sizeof hdr}, {p, resp.length}};
    (void)conn_->SendFramed(parts);  // copies the bytes while the key lock holds the region
    sent = true;
  });
  return sent;
}

void TcpEpCore::Respond(const wire::TcpResponse& resp) {
  std::byte hdr[kFrameHeaderSize + wire::kTcpResponseHeader];
  Conn::EncodeHeader(hdr, wire::kTcpResponseHeader, wire::kFrameTcpResp, 0, 0);
  wire::EncodeTcpResponse(hdr + kFrameHeaderSize, resp);
  const iovec part{hdr, sizeof hdr};
  (void)conn_->SendFramed(std::span<const iovec>(&part, 1));
}

bool TcpEpCore::HasRoomForArrival() {
  if (recv_cq_ == nullptr) return false;
  MutexLock l(recv_mu_);
  return !posted_.empty() || arrivals_.size() < max_recv_;
}

void TcpEpCore::Deliver(TcpArrival a) {
  UniqueLock l(recv_mu_);
  if (posted_.empty()) {
    arrivals_.push_back(std::move(a));
    return;
  }
  const RecvRequest rr = posted_.front();
  posted_.pop_front();
  l.Unlock();
  recv_cq_->Push(Match(rr, a));
}

Completion TcpEpCore::Match(const RecvRequest& rr, const TcpArrival& a) const {
  Completion c = MakeCompletion(rr.tag, Opcode::kRecv, id_);
  c.has_imm = a.has_imm;
  c.imm = a.imm;
  if (a.is_send) {
    if (a.data.size() > rr.buffer.length) {
      c.status = make_error_code(FabricErrc::kTooLong);
    } else {
      if (!a.data.empty()) std::memcpy(rr.buffer.addr, a.data.data(), a.data.size());
      c.byte_len = static_cast<uint32_t>(a.data.size());
    }
  } else {
    c.byte_len = a.length;
  }
  return c;
}

}  // namespace rdmq::fabric::internal
