// The checks every provider applies in the same way, so that a mistake gets the same error on
// shm, tcp and verbs: the rights, bounds and alignment of a one-sided operation against its
// target window, the shape of work requests, receives, grants and endpoint options; and the
// completions those checks produce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal {

// The right a one-sided opcode needs (kRemoteWrite, kRemoteRead or kRemoteAtomic; 0 for SEND).
uint32_t RequiredAccess(Opcode op) noexcept;
inline bool IsAtomic(Opcode op) noexcept { return op == Opcode::kFetchAdd || op == Opcode::kCompareSwap; }
// Bytes of the target a work request touches: 8 for atomics, the local length otherwise.
inline uint64_t TargetLength(const WorkRequest& wr) noexcept {
  return IsAtomic(wr.opcode) ? 8 : wr.local.length;
}
// The check every target applies before any byte moves: rights, then bounds of
// [offset, offset+len) within a window of `window_len` bytes, then 8-byte alignment of atomics
// (`target_addr` is the address the operation would touch). Returns kOk_ when allowed.
FabricErrc CheckAccess(Opcode op, uint32_t granted, uint64_t window_len, uint64_t offset, uint64_t len,
                       uint64_t target_addr) noexcept;

// Validates the shape of a work request that every provider rejects at post time
// (kInvalidArgument): unknown opcode, missing remote, missing local memory, SEND too large
// (kTooLong), atomic result buffer shorter than 8 bytes.
Status ValidateWorkRequest(const WorkRequest& wr);
// A receive with a length but no buffer (kInvalidArgument).
Status ValidateRecvRequest(const RecvRequest& rr);
// The PostRecv checks before anything is queued: the endpoint has a receive queue, every buffer
// is valid.
Status ValidateRecvRequests(const CompletionQueue* recv_cq, std::span<const RecvRequest> rrs);
// kQueueFull: `outstanding` of `max` entries in use ("<n> <what> (max <max>)<hint>").
Status QueueFull(uint64_t outstanding, uint32_t max, const char* what, const char* hint = "");

// The argument checks of Endpoint::GrantAccess common to every provider: rights within the
// region's, a non-empty window inside it.
Status CheckGrant(const Region& region, uint64_t offset, uint64_t length, uint32_t access);

// The EndpointOptions checks common to every provider: a send queue, and both queues created by
// this provider (`Cq`), named `provider` in the error.
template <class Cq>
Status CheckEndpointCqs(const EndpointOptions& o, const char* provider) {
  if (o.send_cq == nullptr) return Status(Errc::kInvalidArgument, "EndpointOptions.send_cq is required");
  if (dynamic_cast<Cq*>(o.send_cq) == nullptr ||
      (o.recv_cq != nullptr && dynamic_cast<Cq*>(o.recv_cq) == nullptr)) {
    return Status(FabricErrc::kWrongProvider,
                  std::string("completion queues must come from a ") + provider + " fabric");
  }
  return Status::Ok();
}

// A Completion for an operation.
inline Completion MakeCompletion(uint64_t tag, Opcode op, uint64_t endpoint_id,
                                 FabricErrc err = FabricErrc::kOk_, uint32_t byte_len = 0) {
  Completion c;
  c.tag = tag;
  c.opcode = op;
  if (err != FabricErrc::kOk_) c.status = make_error_code(err);
  c.byte_len = byte_len;
  c.endpoint_id = endpoint_id;
  return c;
}

// kPeerGone completions for receives that will never be matched, appended to `out`; `posted`
// is left empty.
void FlushReceives(std::deque<RecvRequest>& posted, uint64_t endpoint_id, std::vector<Completion>& out);

}  // namespace rdmq::fabric::internal
