// What every provider's endpoint shares.
//
// EndpointCore holds an endpoint's connection bookkeeping: the bootstrap connection, the peer's
// names, liveness, the control-message queue, the hello handshake, closing, and the checks of
// posted work requests and attached descriptors. A provider's endpoint core derives from it and
// adds its data path. EndpointHandle is the Endpoint object the application holds; it forwards to
// the provider's core without a virtual call of its own.
//
// Lifecycle: MarkGone (the bootstrap connection ended, a protocol error, or Close) acts once:
// Retire() turns liveness off (tcp flushes outstanding operations in the same step), waiters in
// AwaitHelloAck/RecvControl and the provider's own waits on mu_/cv_ are woken, then AfterGone()
// runs (shm rings its receive queue, verbs moves its QP to the error state). Close acts once:
// the bootstrap connection is closed, MarkGone, then AfterClose() (the provider's teardown).
//
// Threading: ConnHandler callbacks run on the agent thread; SendControl, RecvControl, MarkGone
// and Close are thread-safe; the setup methods run before the endpoint is shared; Post and
// PostRecv of the providers run on one thread at a time (the Endpoint contract).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "agent.h"
#include "checks.h"
#include "conn.h"
#include "posix.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"
#include "region_base.h"
#include "wire.h"

namespace rdmq::fabric::internal {

// A process-wide unique endpoint id.
uint64_t NextEndpointId() noexcept;

class EndpointCore : public ConnHandler {
 public:
  EndpointCore(Provider provider, const EndpointOptions& o);
  ~EndpointCore() override = default;
  EndpointCore(const EndpointCore&) = delete;
  EndpointCore& operator=(const EndpointCore&) = delete;

  uint64_t id() const noexcept { return id_; }
  Provider provider() const noexcept { return provider_; }
  // False once the peer is gone or the endpoint closed.
  bool alive() const noexcept { return alive_.load(std::memory_order_acquire); }
  bool connected() const noexcept { return alive(); }
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  const std::shared_ptr<Conn>& conn() const noexcept { return conn_; }
  // The peer's bootstrap address (or, accepting, a name for its socket), for messages.
  const std::string& peer_node() const noexcept { return peer_node_; }
  // The CN of the peer's verified TLS certificate (Endpoint::peer_identity), taken from the
  // connection once its hello arrived.
  const std::string& peer_identity() const noexcept { return peer_identity_; }

  // ---- setup, before the endpoint is shared
  // Connecting side: `fd` (connected to `peer`, also the peer's name) becomes the bootstrap
  // connection (inside TLS with `tls`), read with `self` (this endpoint) as its handler.
  void StartConn(Agent& agent, UniqueFd fd, std::string peer, std::shared_ptr<ConnHandler> self,
                 std::unique_ptr<TlsSession> tls = nullptr);
  // Accepting side: `conn` becomes the bootstrap connection.
  void set_conn(std::shared_ptr<Conn> conn) { conn_ = std::move(conn); }
  // Accepting side: `self` (this endpoint) takes over the connection's frames from the accept
  // queue. False if the peer already left.
  bool TakeOverConn(std::shared_ptr<ConnHandler> self);
  void set_peer_node(std::string node) { peer_node_ = std::move(node); }
  // The hello this side sends: this endpoint's id and `node`, the fabric's bootstrap address.
  wire::Hello MakeHello(const std::string& node) const;
  // Sends a hello (kFrameHello connecting, kFrameHelloAck accepting), with `fds`.
  Status SendHello(uint8_t frame_type, const wire::Hello& h, std::span<const int> fds = {});
  // Connecting side: waits up to the connect timeout for the acceptor's hello; the fds that came
  // with it are moved to `fds` if given (else closed with the endpoint). A TLS failure on the
  // way (kTls) is returned as such, with OpenSSL's reason.
  Result<wire::Hello> AwaitHelloAck(std::vector<UniqueFd>* fds = nullptr) EXCLUDES(mu_);

  // ---- control messages over the bootstrap connection (Endpoint::SendControl/RecvControl)
  Status SendControl(std::span<const std::byte> message);
  Result<std::string> RecvControl(std::chrono::nanoseconds timeout) EXCLUDES(mu_);

  // The peer is gone (or this side closes). Idempotent.
  void MarkGone(const Status& why) EXCLUDES(mu_);
  // Disconnects (Endpoint::Close). Idempotent.
  void Close() EXCLUDES(mu_);
  void OnClosed(const Status& why) override { MarkGone(why); }

 protected:
  // Handles the frames every provider treats alike (control messages, the acceptor's hello);
  // false for other types. Agent thread.
  bool OnCommonFrame(uint8_t type, std::span<const std::byte> payload, std::vector<UniqueFd>& fds)
      EXCLUDES(mu_);
  // Turns liveness off; false if it already was. Overrides do it together with their own flush.
  virtual bool Retire() { return alive_.exchange(false, std::memory_order_acq_rel); }
  virtual void AfterGone() {}
  virtual void AfterClose() {}

  // The per-request checks of Post every provider makes before anything is posted: the request's
  // shape, and that its remote region was attached on this endpoint.
  Status CheckPostable(const WorkRequest& wr) const {
    RDMQ_RETURN_IF_ERROR(ValidateWorkRequest(wr));
    if (wr.opcode != Opcode::kSend && (wr.remote->descriptor().provider != provider_ ||
                                       static_cast<const AttachedRegion*>(wr.remote)->endpoint_id() != id_)) {
      return Status(Errc::kInvalidArgument, "remote region was not attached on this endpoint");
    }
    return Status::Ok();
  }
  // kWrongProvider for a descriptor of another provider (the start of Attach).
  Status CheckAttachable(const RegionDescriptor& d) const;
  // kPeerGone naming this endpoint.
  Status Gone() const;

  const uint64_t id_;
  const Provider provider_;
  const std::chrono::milliseconds timeout_;  // EndpointOptions::connect_timeout
  const uint32_t max_send_, max_recv_;       // EndpointOptions::max_send_wr, max_recv_wr
  std::shared_ptr<Conn> conn_;
  std::string peer_node_;
  std::string peer_identity_;  // set during setup, before the endpoint is shared
  std::atomic<bool> alive_{true};

  Mutex mu_;    // the handshake and control state below, and providers' waits for the agent
  CondVar cv_;  // signalled under mu_ when that state changes or the peer is gone

 private:
  std::atomic<bool> closed_{false};
  Status gone_reason_ GUARDED_BY(mu_);
  std::deque<std::string> control_ GUARDED_BY(mu_);
  bool handshake_done_ GUARDED_BY(mu_) = false;
  Status handshake_ GUARDED_BY(mu_);  // a malformed hello from the acceptor
  wire::Hello hello_ GUARDED_BY(mu_);
  std::vector<UniqueFd> hello_fds_ GUARDED_BY(mu_);
};

// The Endpoint the application holds: forwards to the provider's core `Core` (Post, PostRecv,
// Attach, GrantAccess(fabric, ...), connected) and keeps the fabric core `Fab` alive. Destroying
// it closes the endpoint.
template <class Core, class Fab>
class EndpointHandle final : public Endpoint {
 public:
  EndpointHandle(std::shared_ptr<Fab> fab, std::shared_ptr<Core> core, std::string peer)
      : fab_(std::move(fab)), core_(std::move(core)), peer_(std::move(peer)) {}
  ~EndpointHandle() override { core_->Close(); }
  EndpointHandle(const EndpointHandle&) = delete;
  EndpointHandle& operator=(const EndpointHandle&) = delete;

  uint64_t id() const noexcept override { return core_->id(); }
  Provider provider() const noexcept override { return core_->provider(); }
  const std::string& peer() const noexcept override { return peer_; }
  const std::string& peer_identity() const noexcept override { return core_->peer_identity(); }
  bool connected() const noexcept override { return core_->connected(); }
  Status Post(std::span<const WorkRequest> wrs) override { return core_->Post(wrs); }
  Status PostRecv(std::span<const RecvRequest> rrs) override { return core_->PostRecv(rrs); }
  Result<std::unique_ptr<RemoteRegion>> Attach(const RegionDescriptor& d) override {
    return core_->Attach(d);
  }
  Result<std::unique_ptr<Grant>> GrantAccess(Region& region, uint64_t offset, uint64_t length,
                                             uint32_t access) override {
    return core_->GrantAccess(fab_, region, offset, length, access);
  }
  Status SendControl(std::span<const std::byte> m) override { return core_->SendControl(m); }
  Result<std::string> RecvControl(std::chrono::nanoseconds t) override { return core_->RecvControl(t); }
  void Close() override { core_->Close(); }

 private:
  std::shared_ptr<Fab> fab_;
  std::shared_ptr<Core> core_;
  std::string peer_;
};

}  // namespace rdmq::fabric::internal
