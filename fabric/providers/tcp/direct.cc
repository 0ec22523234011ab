// Payloads received in place (conn.h, "in-place receipt"), on the agent thread: a WRITE's bytes
// go from the socket straight into the target region, a READ's data straight into the buffer the
// initiator posted. Everything unusual (a malformed head, a failed check, a response that does
// not match) is declined and takes the buffered path, which answers or fails it as before.
#include <atomic>

#include "endpoint.h"

namespace rdmq::fabric::internal {

size_t TcpEpCore::DirectHead(uint8_t type) {
  if (type == wire::kFrameTcpReq) return wire::kTcpRequestHeader;
  if (type == wire::kFrameTcpResp) return wire::kTcpResponseHeader;
  return 0;
}

bool TcpEpCore::BeginDirect(uint8_t type, std::span<const std::byte> head, size_t rest) {
  return type == wire::kFrameTcpReq ? BeginDirectWrite(head, rest) : BeginDirectRead(head, rest);
}

bool TcpEpCore::BeginDirectWrite(std::span<const std::byte> head, size_t rest) {
  auto req = wire::DecodeTcpRequest(head, rest);
  if (!req.ok()) return false;
  const auto op = static_cast<Opcode>(req->opcode);
  if (op != Opcode::kWrite && op != Opcode::kWriteImm) return false;
  // The immediate needs a receive before any byte moves (nothing else takes one meanwhile: only
  // this thread delivers arrivals).
  if (op == Opcode::kWriteImm && !HasRoomForArrival()) return false;
  // Every check before any byte moves; a failure is answered on the buffered path.
  if (fab_.WithKey(req->key, id_, op, req->offset, rest, [](std::byte*) {}) != FabricErrc::kOk_) return false;
  direct_ = Direct{};
  direct_.kind = Direct::kWrite;
  direct_.req = *req;
  return true;
}

bool TcpEpCore::BeginDirectRead(std::span<const std::byte> head, size_t rest) {
  auto resp = wire::DecodeTcpResponse(head, rest);
  if (!resp.ok() || resp->errc != 0) return false;
  MutexLock l(out_mu_);
  if (outstanding_.empty()) return false;
  const TcpOutstanding& o = outstanding_.front();
  if (o.seq != resp->seq || o.opcode != Opcode::kRead || o.length != rest) return false;
  direct_ = Direct{};
  direct_.kind = Direct::kRead;
  direct_.resp = *resp;
  // The buffer stays the fabric's until the completion: Close waits for this callback to end
  // (Conn::ClearHandler) before it flushes the operation.
  direct_.local = static_cast<std::byte*>(o.local);
  return true;
}

ssize_t TcpEpCore::ReceiveDirect(size_t left, const DirectFill& fill) {
  ssize_t placed = 0;
  bool filled = false;
  if (direct_.kind == Direct::kRead) {
    placed = fill(direct_.local + direct_.done, left);
    filled = true;
  } else if (direct_.kind == Direct::kWrite && direct_.errc == FabricErrc::kOk_) {
    // Rechecked for every read, and placed under the key table's lock: once Revoke returns, no
    // byte lands with the old key (the rest is dropped and the WRITE fails kRevoked).
    const wire::TcpRequest& r = direct_.req;
    direct_.errc = fab_.WithKey(r.key, id_, static_cast<Opcode>(r.opcode), r.offset + direct_.done, left,
                                [&](std::byte* p) {
                                  placed = fill(p, left);
                                  filled = true;
                                });
  }
  if (!filled) placed = fill(nullptr, left);
  if (placed > 0) direct_.done += static_cast<size_t>(placed);
  return placed;
}

void TcpEpCore::EndDirect() {
  const Direct d = direct_;
  direct_ = Direct{};
  if (d.kind == Direct::kRead) return Finish(d.resp, nullptr);
  if (d.kind != Direct::kWrite) return;
  std::atomic_thread_fence(std::memory_order_release);
  wire::TcpResponse resp;
  resp.seq = d.req.seq;
  resp.errc = static_cast<uint32_t>(d.errc);
  if (d.errc == FabricErrc::kOk_ && static_cast<Opcode>(d.req.opcode) == Opcode::kWriteImm) {
    Deliver(TcpArrival{true, d.req.imm, d.req.length, false, {}});
  }
  Respond(resp);
}

}  // namespace rdmq::fabric::internal
