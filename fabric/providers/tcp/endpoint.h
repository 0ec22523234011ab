// The tcp provider's endpoint: one TCP connection (TCP_NODELAY) that carries everything as
// frames: the handshake, control messages, and the data path, requests {WRITE, WRITE_IMM, READ,
// FETCH_ADD, COMPARE_SWAP, SEND} from the initiator and one response per request from the
// target, in order. The target's agent applies a request to registered memory only after
// checking key, scope, rights, bounds and alignment. Large payloads are received in place
// (conn.h): a WRITE's bytes go from the socket straight into the target region (the key checked
// again, under the key table's lock, for every read), a READ's data straight into the
// initiator's buffer; so, as on verbs, a WRITE cut short by a dying peer may be partly placed (a
// prefix of it). The initiator's completions are produced when responses arrive, so a completion
// means the remote effect happened. Application threads never serve requests; they only post (a
// batch of work requests goes out in one socket write) and poll.
//
// Files: endpoint.cc (frames, closing, attach, grants), serve.cc (the target side: requests and
// arrivals), post.cc (the initiator side: posting and responses), direct.cc (payloads received
// in place).
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core.h"
#include "fabric/endpoint_base.h"
#include "fabric/soft_cq.h"
#include "rdmq/common/mutex.h"

namespace rdmq::fabric::internal {

// An operation waiting for its response.
struct TcpOutstanding {
  uint64_t seq;
  uint64_t tag;
  Opcode opcode;
  bool signaled;
  void* local;
  uint32_t length;
};

// A SEND or WRITE_IMM that arrived before a receive was posted.
struct TcpArrival {
  bool has_imm = false;
  uint32_t imm = 0;
  uint32_t length = 0;  // WRITE_IMM: bytes written
  bool is_send = false;
  std::string data;  // SEND payload
};

class TcpEpCore final : public EndpointCore {
 public:
  TcpEpCore(TcpCore& fab, const EndpointOptions& o);

  // Nothing to register: completions are pushed to the queues as responses and arrivals come.
  void Register() {}

  // ---- Endpoint (application threads)
  Status Post(std::span<const WorkRequest> wrs) EXCLUDES(out_mu_);
  Status PostRecv(std::span<const RecvRequest> rrs) EXCLUDES(recv_mu_);
  Result<std::unique_ptr<RemoteRegion>> Attach(const RegionDescriptor& d);
  Result<std::unique_ptr<Grant>> GrantAccess(const std::shared_ptr<TcpCore>& fab, Region& region,
                                             uint64_t offset, uint64_t length, uint32_t access);

  // ---- ConnHandler (agent thread)
  void OnFrame(uint8_t type, uint16_t flags, std::span<const std::byte> payload,
               std::vector<UniqueFd>& fds) override;
  // In-place receipt (direct.cc): WRITE and WRITE_IMM payloads into the target region, READ
  // response data into the initiator's buffer.
  size_t DirectHead(uint8_t type) override;
  bool BeginDirect(uint8_t type, std::span<const std::byte> head, size_t rest) override;
  ssize_t ReceiveDirect(size_t left, const DirectFill& fill) override;
  void EndDirect() override;

 private:
  // Turns liveness off and flushes outstanding operations and posted receives (kPeerGone).
  bool Retire() override EXCLUDES(out_mu_, recv_mu_);
  void ProtocolError(const std::string& what);

  // ---- target side (serve.cc)
  void Serve(std::span<const std::byte> frame);
  // Applies a WRITE or WRITE_IMM's payload to the key's window.
  FabricErrc ApplyWrite(const wire::TcpRequest& req, std::span<const std::byte> data);
  // Answers a READ with the data (copied while the key lock holds the region); false when the
  // check failed (`*e` says why).
  bool AnswerRead(const wire::TcpRequest& req, FabricErrc* e);
  void Respond(const wire::TcpResponse& resp);
  bool HasRoomForArrival() EXCLUDES(recv_mu_);
  // Matches an arrival with the oldest posted receive, or parks it. Any thread.
  void Deliver(TcpArrival a) EXCLUDES(recv_mu_);
  Completion Match(const RecvRequest& rr, const TcpArrival& a) const;

  // ---- initiator side (post.cc)
  // A response: completes the oldest outstanding operation.
  void Complete(std::span<const std::byte> frame) EXCLUDES(out_mu_);
  // Completes the oldest outstanding operation with `resp`; a READ's data is at `data` (nullptr:
  // it was received in place).
  void Finish(const wire::TcpResponse& resp, const std::byte* data) EXCLUDES(out_mu_);

  // ---- in-place receipt (direct.cc)
  bool BeginDirectWrite(std::span<const std::byte> head, size_t rest);
  bool BeginDirectRead(std::span<const std::byte> head, size_t rest) EXCLUDES(out_mu_);

  TcpCore& fab_;
  SoftCq* const send_cq_;
  SoftCq* const recv_cq_;

  // Post() state (one posting thread at a time).
  std::vector<std::byte> scratch_;
  std::vector<iovec> iov_;

  Mutex out_mu_;
  std::deque<TcpOutstanding> outstanding_ GUARDED_BY(out_mu_);
  uint64_t next_seq_ GUARDED_BY(out_mu_) = 1;

  Mutex recv_mu_;
  std::deque<RecvRequest> posted_ GUARDED_BY(recv_mu_);
  std::deque<TcpArrival> arrivals_ GUARDED_BY(recv_mu_);

  // The frame whose payload is being received in place (agent thread only): a WRITE or
  // WRITE_IMM request (`req`, placed at req.offset + done; `errc` once the key failed a recheck),
  // or a READ's response (`resp`, its data placed at `local` + done).
  struct Direct {
    enum Kind { kNone, kWrite, kRead } kind = kNone;
    wire::TcpRequest req;
    wire::TcpResponse resp;
    std::byte* local = nullptr;
    size_t done = 0;
    FabricErrc errc = FabricErrc::kOk_;
  };
  Direct direct_;
};

}  // namespace rdmq::fabric::internal
