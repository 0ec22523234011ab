#include "checks.h"

#include <cstdint>

namespace rdmq::fabric::internal {

uint32_t RequiredAccess(Opcode op) noexcept {
  switch (op) {
    case Opcode::kWrite:
    case Opcode::kWriteImm:
      return kRemoteWrite;
    case Opcode::kRead:
      return kRemoteRead;
    case Opcode::kFetchAdd:
    case Opcode::kCompareSwap:
      return kRemoteAtomic;
    default:
      return 0;
  }
}

FabricErrc CheckAccess(Opcode op, uint32_t granted, uint64_t window_len, uint64_t offset, uint64_t len,
                       uint64_t target_addr) noexcept {
  const uint32_t need = RequiredAccess(op);
  if ((granted & need) != need) return FabricErrc::kAccessDenied;
  if (offset > window_len || len > window_len - offset) return FabricErrc::kOutOfBounds;
  if (IsAtomic(op) && target_addr % 8 != 0) return FabricErrc::kUnaligned;
  return FabricErrc::kOk_;
}

Status ValidateWorkRequest(const WorkRequest& wr) {
  switch (wr.opcode) {
    case Opcode::kWrite:
    case Opcode::kWriteImm:
    case Opcode::kRead:
      if (wr.remote == nullptr) return Status(Errc::kInvalidArgument, "work request without a remote region");
      if (wr.local.length > 0 && wr.local.addr == nullptr) {
        return Status(Errc::kInvalidArgument, "work request with a null local buffer");
      }
      if (wr.local.length > UINT32_MAX) {
        return Status(Errc::kInvalidArgument, "work request longer than 4 GiB");
      }
      return Status::Ok();
    case Opcode::kFetchAdd:
    case Opcode::kCompareSwap:
      if (wr.remote == nullptr) return Status(Errc::kInvalidArgument, "atomic without a remote region");
      if (wr.local.addr != nullptr && wr.local.length < 8) {
        return Status(Errc::kInvalidArgument, "atomic result buffer shorter than 8 bytes");
      }
      return Status::Ok();
    case Opcode::kSend:
      if (wr.local.length > 0 && wr.local.addr == nullptr) {
        return Status(Errc::kInvalidArgument, "SEND with a null local buffer");
      }
      if (wr.local.length > kMaxSendSize) {
        return Status(FabricErrc::kTooLong, "SEND of " + std::to_string(wr.local.length) + " bytes (max " +
                                                std::to_string(kMaxSendSize) + ")");
      }
      return Status::Ok();
    default:
      return Status(Errc::kInvalidArgument,
                    "unknown work request opcode " + std::to_string(static_cast<int>(wr.opcode)));
  }
}

Status ValidateRecvRequest(const RecvRequest& rr) {
  if (rr.buffer.length > 0 && rr.buffer.addr == nullptr) {
    return Status(Errc::kInvalidArgument, "receive with a null buffer");
  }
  return Status::Ok();
}

Status ValidateRecvRequests(const CompletionQueue* recv_cq, std::span<const RecvRequest> rrs) {
  if (recv_cq == nullptr) return Status(Errc::kInvalidArgument, "endpoint has no receive completion queue");
  for (const RecvRequest& rr : rrs) RDMQ_RETURN_IF_ERROR(ValidateRecvRequest(rr));
  return Status::Ok();
}

Status QueueFull(uint64_t outstanding, uint32_t max, const char* what, const char* hint) {
  return Status(FabricErrc::kQueueFull,
                std::to_string(outstanding) + " " + what + " (max " + std::to_string(max) + ")" + hint);
}

Status CheckGrant(const Region& r, uint64_t offset, uint64_t length, uint32_t access) {
  if ((access & ~r.access()) != 0) {
    return Status(FabricErrc::kAccessDenied, "GrantAccess: rights beyond the region's registration");
  }
  if (length == 0 || offset > r.size() || length > r.size() - offset) {
    return Status(FabricErrc::kOutOfBounds, "GrantAccess: [" + std::to_string(offset) + ", +" +
                                                std::to_string(length) + ") outside a region of " +
                                                std::to_string(r.size()) + " bytes");
  }
  return Status::Ok();
}

void FlushReceives(std::deque<RecvRequest>& posted, uint64_t endpoint_id, std::vector<Completion>& out) {
  for (const RecvRequest& rr : posted)
    out.push_back(MakeCompletion(rr.tag, Opcode::kRecv, endpoint_id, FabricErrc::kPeerGone));
  posted.clear();
}

}  // namespace rdmq::fabric::internal
