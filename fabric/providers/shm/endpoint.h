// The shm provider's endpoint: a bootstrap connection on the fabric's Unix socket plus, per
// direction, a mailbox (mailbox.h). One-sided operations never involve the owner: Attach fetches
// the region's fd over the bootstrap socket (SCM_RIGHTS; a read-only reopen when the key lacks
// write and atomic rights) and maps it; WRITE and READ are copies, atomics are CPU atomics on
// the mapped word; the owner's key page tells whether a key was revoked.
//
// Files: endpoint.cc (handshake, frames, closing), attach.cc (Attach and serving the peer's
// attaches), post.cc (posting and the receive mailbox's drain).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "core.h"
#include "fabric/endpoint_base.h"
#include "fabric/soft_cq.h"
#include "mailbox.h"
#include "rdmq/common/mutex.h"
#include "region.h"

namespace rdmq::fabric::internal {

class ShmEpCore final : public EndpointCore, public CqSource {
 public:
  ShmEpCore(ShmCore& fab, const EndpointOptions& o);

  // ---- setup
  // Creates this side's receive mailbox (if it has a receive CQ).
  Status InitInbound();
  // Sends this side's hello (kFrameHello connecting, kFrameHelloAck accepting) with the fds the
  // peer maps: the key page, and with a mailbox, its memfd and the receive CQ's doorbell.
  Status SendShmHello(uint8_t frame_type, int recv_bell_fd);
  // Connecting side: waits for the acceptor's hello and maps what it brought.
  Status AwaitPeer();
  // Maps what the peer's hello brought: its key page, its mailbox and its receive doorbell.
  Status AdoptPeer(const wire::Hello& h, std::vector<UniqueFd>& fds);
  uint64_t peer_id() const noexcept { return peer_id_; }
  // Makes the receive mailbox a source of the receive CQ. After the handshake.
  void Register();

  // ---- Endpoint
  Status Post(std::span<const WorkRequest> wrs);
  Status PostRecv(std::span<const RecvRequest> rrs) EXCLUDES(recv_mu_);
  Result<std::unique_ptr<RemoteRegion>> Attach(const RegionDescriptor& desc) EXCLUDES(mu_);
  Result<std::unique_ptr<Grant>> GrantAccess(const std::shared_ptr<ShmCore>& fab, Region& region,
                                             uint64_t offset, uint64_t length, uint32_t access);

  // ---- ConnHandler (agent thread)
  void OnFrame(uint8_t type, uint16_t flags, std::span<const std::byte> payload,
               std::vector<UniqueFd>& fds) override;

  // ---- CqSource (the receive queue's poller)
  bool Ready() const noexcept override;
  size_t Drain(std::span<Completion> out) override EXCLUDES(recv_mu_);

 private:
  void AfterGone() override;
  void AfterClose() override EXCLUDES(recv_mu_);

  void ServeAttach(std::span<const std::byte> payload);
  void OnAttachReply(std::span<const std::byte> payload, std::vector<UniqueFd>& fds) EXCLUDES(mu_);
  // Maps the window an attach reply grants.
  Result<std::unique_ptr<RemoteRegion>> MapWindow(const RegionDescriptor& desc, const wire::AttachReply& rep,
                                                  const UniqueFd& fd);
  // Carries out one work request; `*rang`: the peer's doorbell must be rung.
  FabricErrc Execute(const WorkRequest& wr, bool* rang);
  FabricErrc ExecuteOneSided(const WorkRequest& wr, const ShmRemote& r, bool* rang);
  // A completion for a posted receive from the mailbox entry `e` at the head.
  Completion Receive(const RecvRequest& rr, const wire::MailboxEntry& e) const;

  ShmCore& fab_;
  SoftCq* const send_cq_;
  SoftCq* const recv_cq_;
  uint64_t peer_id_ = 0;
  bool registered_ = false;

  InboundMailbox inbox_;    // we consume
  OutboundMailbox outbox_;  // the peer's; we produce
  Mapping peer_keys_;       // the peer's key page, read-only

  Mutex recv_mu_;
  std::deque<RecvRequest> posted_ GUARDED_BY(recv_mu_);
  std::atomic<size_t> posted_count_{0};

  uint64_t next_req_ GUARDED_BY(mu_) = 1;
  std::map<uint64_t, std::pair<wire::AttachReply, UniqueFd>> attach_replies_ GUARDED_BY(mu_);
};

}  // namespace rdmq::fabric::internal
