// The verbs provider's endpoint: an RC queue pair set up with rdma_cm beside a TCP bootstrap
// stream that carries the handshake and control messages and tells when the peer dies (then the
// QP is moved to the error state so that everything outstanding completes with kPeerGone at once).
//
// Data path: one ibv_post_send per posted batch (a linked WR list), inline data up to the QP's
// max_inline, selective signalling with forced signals so the send queue never overflows, and
// checks of the attached descriptor's bounds, rights and alignment before anything reaches the
// wire (an RC QP that sees a remote error is dead, so refusing obvious mistakes locally keeps the
// connection).
//
// Files: connect.cc (QP creation, the rdma_cm connection and its handshake), post.cc (posting
// work requests and receives, the provider's own binds and invalidations), cq.cc (completion
// handling), grant.cc (memory windows), endpoint.cc (frames, failure, closing).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cq.h"
#include "device.h"
#include "fabric/endpoint_base.h"
#include "memory.h"
#include "rdmq/common/mutex.h"
#include "resources.h"

namespace rdmq::fabric::internal {

// Send-queue slots kept for the provider's own binds and invalidations.
inline constexpr uint32_t kInternalReserve = 8;

// A bind or invalidation the provider posts for itself and waits for.
struct InternalOp {
  std::atomic<int> state{0};  // 0 pending, 1 done
  ibv_wc_status status = IBV_WC_SUCCESS;
};

// What a send-queue slot remembers of its work request until its completion.
struct SendSlot {
  uint64_t tag = 0;
  Opcode opcode = Opcode::kWrite;
  bool user_signaled = false;
  uint32_t length = 0;
  std::shared_ptr<InternalOp> internal;  // set for binds/invalidations
};

class VerbsEpCore final : public EndpointCore, public std::enable_shared_from_this<VerbsEpCore> {
 public:
  VerbsEpCore(VerbsCore& fab, const EndpointOptions& o);

  // False once the peer is gone or an error completion ended the connection.
  bool connected() const noexcept { return alive() && !failed_.load(std::memory_order_acquire); }
  // kPeerGone, or kFlushed after an error completion.
  Status CheckUsable() const;

  // ---- connection (connect.cc)
  // Connector: hello over the bootstrap stream, then rdma_cm resolve/connect with the token.
  Status ConnectQp(const std::string& host);
  // Acceptor: answers the hello with the rdma_cm port and this endpoint's token, then takes the
  // connect request that carries the token.
  Status AcceptQp(std::chrono::milliseconds timeout);
  // Makes the QP's completions reach this endpoint. After the connection is established.
  void Register();

  // ---- Endpoint
  Status Post(std::span<const WorkRequest> wrs) EXCLUDES(post_mu_);
  Status PostRecv(std::span<const RecvRequest> rrs) EXCLUDES(recv_mu_);
  Result<std::unique_ptr<RemoteRegion>> Attach(const RegionDescriptor& d);
  Result<std::unique_ptr<Grant>> GrantAccess(const std::shared_ptr<VerbsCore>& fab, Region& region,
                                             uint64_t offset, uint64_t length, uint32_t access);
  // Posts one of the provider's own signalled work requests and waits for it, driving the send
  // completion queue itself if nobody else does.
  Status RunInternal(ibv_send_wr wr, const std::string& what) EXCLUDES(post_mu_);

  // ---- completions (cq.cc; called by VerbsCq under its lock)
  bool OnSendCompletion(const ibv_wc& wc, Completion* out);
  bool OnRecvCompletion(const ibv_wc& wc, Completion* out);

  // ---- ConnHandler (agent thread)
  void OnFrame(uint8_t type, uint16_t flags, std::span<const std::byte> payload,
               std::vector<UniqueFd>& fds) override;

 private:
  // The peer is gone (or we close): move the QP to the error state so that every outstanding
  // work request completes (flushed, reported as kPeerGone).
  void AfterGone() override;
  void AfterClose() override;

  Status CreateQp(rdma_cm_id* id);
  rdma_conn_param ConnParam(const void* priv, uint8_t priv_len) const;
  // Acceptor: the connect request carrying this endpoint's token, up to `deadline` (MonoNanos).
  Result<rdma_cm_id*> TakeConnectRequest(uint64_t deadline);
  // The lkey for a local buffer, from its region or the fabric's registry.
  Result<uint32_t> LocalKey(const LocalBuffer& b) const;
  // Fills wr_[k]/sge_[k] for `wr` (send-queue sequence `seq`).
  void BuildSendWr(const WorkRequest& wr, size_t k, uint64_t seq, uint32_t lkey, bool last)
      REQUIRES(post_mu_);
  // Records the status of an error completion (the connection is dead from now on).
  void NoteFailure(ibv_wc_status status);
  // A peer that dies mid-operation may answer in-flight requests with a remote access error (its
  // process exit tears down its memory registrations before its QP). Such an error is reported
  // as kPeerGone when the bootstrap stream shows the peer gone within a short grace period.
  // Costs up to 100 ms, only on a remote error, which ends the connection anyway.
  bool PeerVanished();
  // Work requests or receives posted and not completed yet.
  bool Outstanding() EXCLUDES(post_mu_, recv_mu_);

  VerbsCore& fab_;
  VerbsCq* const send_cq_;
  VerbsCq* const recv_cq_;
  const uint32_t want_inline_;
  uint32_t max_inline_ = 0;
  CmChannelPtr cm_channel_;
  CmIdPtr cm_id_;
  ibv_qp* qp_ = nullptr;
  uint32_t qp_num_ = 0;
  alignas(8) uint64_t scratch_[1] = {0};  // an atomic's result when the caller wants none
  MrPtr scratch_mr_;

  std::atomic<bool> failed_{false};
  std::atomic<int> failure_status_{IBV_WC_SUCCESS};

  // Send queue: slots are written by the posting thread under post_mu_ and read by the
  // completion poller for sequence numbers below send_done_.
  Mutex post_mu_;
  std::vector<SendSlot> send_slots_;
  uint64_t send_seq_ GUARDED_BY(post_mu_) = 0;
  std::atomic<uint64_t> send_done_{0};
  uint32_t unsignaled_run_ GUARDED_BY(post_mu_) = 0;
  std::vector<ibv_send_wr> wr_ GUARDED_BY(post_mu_);
  std::vector<ibv_sge> sge_ GUARDED_BY(post_mu_);
  struct PreparedWr {
    FabricErrc refused;
    uint32_t lkey;
  };
  std::vector<PreparedWr> prepared_;  // Post's thread only

  Mutex recv_mu_;
  std::vector<uint64_t> recv_tags_;  // like send_slots_, under recv_mu_ for posting
  uint64_t recv_seq_ GUARDED_BY(recv_mu_) = 0;
  std::atomic<uint64_t> recv_done_{0};
};

}  // namespace rdmq::fabric::internal
