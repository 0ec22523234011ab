// The tcp provider: a software NIC (docs/fabric.md, "tcp").
//
// Each Fabric runs an agent thread (an Asio io_context). An Endpoint is one TCP connection
// (TCP_NODELAY) that carries everything as frames: the handshake, control messages, and the
// data path: requests {WRITE, WRITE_IMM, READ, FETCH_ADD, COMPARE_SWAP, SEND} from the initiator
// and one response per request from the target, in order. The target's agent applies a request
// to registered memory only after checking key, scope, rights, bounds and alignment, and only
// once the whole frame arrived (a WRITE cut short by a dying peer changes nothing). The
// initiator's completions are produced when responses arrive, so a completion means the remote
// effect happened. Application threads never serve requests; they only post (a batch of work
// requests goes out in one socket write) and poll.
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "conn.h"
#include "providers.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"
#include "soft_cq.h"
#include "util.h"
#include "wire.h"

namespace rdmq::fabric::internal {
namespace {

using namespace std::chrono_literals;

struct TcpKey {
  std::byte* base = nullptr;  // first byte of the window
  uint64_t length = 0;
  uint32_t access = 0;
  uint64_t scope = 0;  // 0: any connection; else the endpoint id that may use it
};

class TcpCore {
 public:
  Agent agent{"rdmq-tcp"};
  AcceptQueue accepts{agent};
  std::string address;  // "tcp:host:port" or ""
  std::shared_ptr<Listener> listener;

  ~TcpCore() { agent.Stop(); }

  Status Init(const FabricOptions& o) {
    if (o.listen.empty()) return Status::Ok();
    std::string_view l = o.listen;
    if (l.substr(0, 4) == "tcp:") l.remove_prefix(4);
    RDMQ_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(l));
    std::string bound;
    RDMQ_ASSIGN_OR_RETURN(UniqueFd fd, ListenTcp(hp.host, hp.port, &bound));
    address = "tcp:" + bound;
    listener = Listener::Start(agent, std::move(fd), [this](UniqueFd f, std::string peer) {
      accepts.OnAccept(std::move(f), std::move(peer));
    });
    return Status::Ok();
  }

  uint64_t AddKey(const TcpKey& k) {
    std::lock_guard lk(mu_);
    uint64_t key;
    do {
      key = RandomKey();
    } while (keys_.count(key) != 0 || revoked_.count(key) != 0);
    keys_[key] = k;
    return key;
  }
  void RevokeKey(uint64_t key) {
    std::lock_guard lk(mu_);
    if (keys_.erase(key) != 0) revoked_.insert(key);
  }

  // Runs `apply` on the key's window under the key-table lock (so that the region cannot be
  // deregistered meanwhile), after the access check; returns the check's verdict.
  template <class F>
  FabricErrc WithKey(uint64_t key, uint64_t endpoint_id, Opcode op, uint64_t offset, uint64_t len,
                     F&& apply) {
    std::lock_guard lk(mu_);
    auto it = keys_.find(key);
    if (it == keys_.end()) return revoked_.count(key) ? FabricErrc::kRevoked : FabricErrc::kBadKey;
    const TcpKey& k = it->second;
    if (k.scope != 0 && k.scope != endpoint_id) return FabricErrc::kBadKey;
    const FabricErrc e =
        CheckAccess(op, k.access, k.length, offset, len, reinterpret_cast<uint64_t>(k.base) + offset);
    if (e != FabricErrc::kOk_) return e;
    apply(k.base + offset);
    return FabricErrc::kOk_;
  }

 private:
  std::mutex mu_;
  std::unordered_map<uint64_t, TcpKey> keys_;
  std::unordered_set<uint64_t> revoked_;
};

class TcpCq : public SoftCq {
 public:
  explicit TcpCq(std::shared_ptr<TcpCore> core) : SoftCq(&bell_), core_(std::move(core)) {}

 private:
  Bell bell_;
  std::shared_ptr<TcpCore> core_;
};

class TcpRegion : public LocalRegion {
 public:
  TcpRegion(std::shared_ptr<TcpCore> core, Mapping owned, std::byte* data, size_t size, uint32_t access)
      : LocalRegion(Provider::kTcp, core->address, std::move(owned), data, size, access),
        core_(std::move(core)) {
    main_key_ = core_->AddKey({data_, size_, access_, 0});
    keys_[access_] = main_key_;
  }
  ~TcpRegion() override {
    for (auto& [a, k] : keys_) core_->RevokeKey(k);
  }
  RegionDescriptor Descriptor() const override { return Describe(main_key_, 0, size_, access_); }
  Result<RegionDescriptor> Descriptor(uint32_t access) const override {
    RDMQ_RETURN_IF_ERROR(CheckSubset(access));
    std::lock_guard lk(mu_);
    auto it = keys_.find(access);
    if (it == keys_.end()) it = keys_.emplace(access, core_->AddKey({data_, size_, access, 0})).first;
    return Describe(it->second, 0, size_, access);
  }
  TcpCore* core() const noexcept { return core_.get(); }

 private:
  std::shared_ptr<TcpCore> core_;
  uint64_t main_key_ = 0;
  mutable std::mutex mu_;
  mutable std::map<uint32_t, uint64_t> keys_;
};

using TcpGrant = KeyGrant<TcpCore>;

class TcpRemote : public RemoteRegion {
 public:
  TcpRemote(RegionDescriptor d, uint64_t endpoint_id) : desc_(std::move(d)), endpoint_id_(endpoint_id) {}
  const RegionDescriptor& descriptor() const noexcept override { return desc_; }
  Status WaitWhileEqual(uint64_t, uint64_t, std::chrono::nanoseconds) override {
    return Status(Errc::kUnsupported, "tcp: waiting on a remote word; the owner notifies with a SEND");
  }
  Status Wake(uint64_t) override {
    return Status(Errc::kUnsupported,
                  "tcp: waking a remote word; notify the owner with a SEND or WRITE_WITH_IMM");
  }
  const std::byte* mapped() const noexcept override { return nullptr; }
  RegionDescriptor desc_;
  uint64_t endpoint_id_;
};

// An operation waiting for its response.
struct Outstanding {
  uint64_t seq;
  uint64_t tag;
  Opcode opcode;
  bool signaled;
  void* local;
  uint32_t length;
};

// A SEND or WRITE_IMM that arrived before a receive was posted.
struct Arrival {
  bool has_imm = false;
  uint32_t imm = 0;
  uint32_t length = 0;  // WRITE_IMM: bytes written
  bool is_send = false;
  std::string data;  // SEND payload
};

class TcpEpCore : public ConnHandler {
 public:
  TcpEpCore(TcpCore& fab, const EndpointOptions& o)
      : fab_(fab),
        id_(NextEndpointId()),
        send_cq_(static_cast<SoftCq*>(o.send_cq)),
        recv_cq_(static_cast<SoftCq*>(o.recv_cq)),
        max_send_(o.max_send_wr),
        max_recv_(o.max_recv_wr),
        timeout_(o.connect_timeout) {}

  // ---- agent thread
  void OnFrame(uint8_t type, uint16_t, std::span<const std::byte> payload, std::vector<UniqueFd>&) override {
    switch (type) {
      case wire::kFrameTcpReq:
        return Serve(payload);
      case wire::kFrameTcpResp:
        return Complete(payload);
      case wire::kFrameControl: {
        std::lock_guard lk(mu_);
        control_.emplace_back(coding::AsChars(payload));
        cv_.notify_all();
        return;
      }
      case wire::kFrameHelloAck: {
        std::lock_guard lk(mu_);
        auto h = wire::DecodeHello(payload);
        if (h.ok()) {
          handshake_done_ = true;
          peer_id_ = h->endpoint_id;
        } else {
          handshake_ = h.status();
        }
        cv_.notify_all();
        return;
      }
      default:
        break;
    }
    ProtocolError("unexpected frame type " + std::to_string(type));
  }

  void OnClosed(const Status& why) override { MarkGone(why); }

  void ProtocolError(const std::string& what) {
    RDMQ_LOG(kError, "fabric", "tcp protocol error; closing the connection")
        .kv("peer", peer_node_)
        .kv("what", what);
    conn_->Close();
  }

  void Serve(std::span<const std::byte> frame) {
    auto req = wire::DecodeTcpRequest(frame);
    if (!req.ok()) return ProtocolError(req.status().ToString());
    const std::span<const std::byte> data = frame.subspan(wire::kTcpRequestHeader);
    const auto op = static_cast<Opcode>(req->opcode);
    wire::TcpResponse resp;
    resp.seq = req->seq;
    FabricErrc e = FabricErrc::kOk_;
    std::byte hdr[kFrameHeaderSize + wire::kTcpResponseHeader];
    switch (op) {
      case Opcode::kWrite:
        e = fab_.WithKey(req->key, id_, op, req->offset, data.size(), [&](std::byte* p) {
          if (!data.empty()) std::memcpy(p, data.data(), data.size());
          std::atomic_thread_fence(std::memory_order_release);
        });
        break;
      case Opcode::kWriteImm:
        // The immediate needs a receive (posted or queued) before any byte moves.
        if (!HasRoomForArrival()) {
          e = FabricErrc::kRnr;
          break;
        }
        e = fab_.WithKey(req->key, id_, op, req->offset, data.size(), [&](std::byte* p) {
          if (!data.empty()) std::memcpy(p, data.data(), data.size());
          std::atomic_thread_fence(std::memory_order_release);
        });
        if (e == FabricErrc::kOk_)
          Deliver(Arrival{true, req->imm, static_cast<uint32_t>(data.size()), false, {}});
        break;
      case Opcode::kSend:
        if (!HasRoomForArrival()) {
          e = FabricErrc::kRnr;
          break;
        }
        Deliver(
            Arrival{false, 0, static_cast<uint32_t>(data.size()), true, std::string(coding::AsChars(data))});
        break;
      case Opcode::kRead: {
        bool sent = false;
        e = fab_.WithKey(req->key, id_, op, req->offset, req->length, [&](std::byte* p) {
          std::atomic_thread_fence(std::memory_order_acquire);
          resp.length = req->length;
          Conn::EncodeHeader(hdr, static_cast<uint32_t>(wire::kTcpResponseHeader + resp.length),
                             wire::kFrameTcpResp, 0, 0);
          wire::EncodeTcpResponse(hdr + kFrameHeaderSize, resp);
          const iovec parts[2] = {{hdr, sizeof hdr}, {p, resp.length}};
          (void)conn_->SendFramed(parts);  // copies the bytes while the key lock holds the region
          sent = true;
        });
        if (sent) return;
        break;
      }
      case Opcode::kFetchAdd:
      case Opcode::kCompareSwap:
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
      default:
        return ProtocolError("unknown opcode");
    }
    resp.errc = static_cast<uint32_t>(e);
    resp.length = 0;
    Conn::EncodeHeader(hdr, wire::kTcpResponseHeader, wire::kFrameTcpResp, 0, 0);
    wire::EncodeTcpResponse(hdr + kFrameHeaderSize, resp);
    const iovec part{hdr, sizeof hdr};
    (void)conn_->SendFramed(std::span<const iovec>(&part, 1));
  }

  void Complete(std::span<const std::byte> frame) {
    auto resp = wire::DecodeTcpResponse(frame);
    if (!resp.ok()) return ProtocolError(resp.status().ToString());
    std::lock_guard lk(out_mu_);
    if (outstanding_.empty() || outstanding_.front().seq != resp->seq) {
      return ProtocolError("response " + std::to_string(resp->seq) + " does not match the oldest request");
    }
    const Outstanding o = outstanding_.front();
    outstanding_.pop_front();
    const auto e = static_cast<FabricErrc>(resp->errc);
    uint32_t byte_len = 0;
    if (e == FabricErrc::kOk_) {
      if (o.opcode == Opcode::kRead) {
        if (resp->length != o.length) return ProtocolError("READ response of the wrong length");
        if (o.length) std::memcpy(o.local, frame.data() + wire::kTcpResponseHeader, o.length);
        byte_len = o.length;
      } else if (o.opcode == Opcode::kFetchAdd || o.opcode == Opcode::kCompareSwap) {
        if (o.local) std::memcpy(o.local, &resp->value, 8);
        byte_len = 8;
      }
    }
    if (o.signaled || e != FabricErrc::kOk_)
      send_cq_->Push(MakeCompletion(o.tag, o.opcode, id_, e, byte_len));
  }

  bool HasRoomForArrival() {
    if (recv_cq_ == nullptr) return false;
    std::lock_guard lk(recv_mu_);
    return !posted_.empty() || arrivals_.size() < max_recv_;
  }

  // Matches an arrival with the oldest posted receive, or parks it. Any thread.
  void Deliver(Arrival a) {
    std::unique_lock lk(recv_mu_);
    if (posted_.empty()) {
      arrivals_.push_back(std::move(a));
      return;
    }
    const RecvRequest rr = posted_.front();
    posted_.pop_front();
    lk.unlock();
    recv_cq_->Push(Match(rr, a));
  }

  Completion Match(const RecvRequest& rr, const Arrival& a) const {
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

  void MarkGone(const Status& why) {
    std::vector<Completion> send_flush, recv_flush;
    {
      std::lock_guard lk(out_mu_);
      if (!alive_.exchange(false)) return;
      for (const Outstanding& o : outstanding_) {
        send_flush.push_back(MakeCompletion(o.tag, o.opcode, id_, FabricErrc::kPeerGone));
      }
      outstanding_.clear();
    }
    {
      std::lock_guard lk(recv_mu_);
      for (const RecvRequest& rr : posted_)
        recv_flush.push_back(MakeCompletion(rr.tag, Opcode::kRecv, id_, FabricErrc::kPeerGone));
      posted_.clear();
    }
    if (!send_flush.empty()) send_cq_->PushMany(send_flush);
    if (!recv_flush.empty() && recv_cq_ != nullptr) recv_cq_->PushMany(recv_flush);
    std::lock_guard lk(mu_);
    gone_reason_ = why;
    cv_.notify_all();
  }

  // ---- application threads
  Status Post(std::span<const WorkRequest> wrs) {
    for (const WorkRequest& wr : wrs) {
      RDMQ_RETURN_IF_ERROR(ValidateWorkRequest(wr));
      if (wr.opcode != Opcode::kSend) {
        if (wr.remote->descriptor().provider != Provider::kTcp ||
            static_cast<const TcpRemote*>(wr.remote)->endpoint_id_ != id_) {
          return Status(Errc::kInvalidArgument, "remote region was not attached on this endpoint");
        }
      }
    }
    // Frame headers live in `scratch`; payloads are gathered from the callers' buffers.
    constexpr size_t kHdr = kFrameHeaderSize + wire::kTcpRequestHeader;
    scratch_.resize(wrs.size() * kHdr);
    iov_.clear();
    {
      std::lock_guard lk(out_mu_);
      if (!alive_) return Status(FabricErrc::kPeerGone, "tcp endpoint to " + peer_node_);
      if (outstanding_.size() + wrs.size() > max_send_) {
        return Status(FabricErrc::kQueueFull, std::to_string(outstanding_.size()) +
                                                  " operations outstanding (max " +
                                                  std::to_string(max_send_) + ")");
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
        if (wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap) r.length = 0;
        std::byte* h = scratch_.data() + i * kHdr;
        Conn::EncodeHeader(h, static_cast<uint32_t>(wire::kTcpRequestHeader + (carries ? r.length : 0)),
                           wire::kFrameTcpReq, 0, 0);
        wire::EncodeTcpRequest(h + kFrameHeaderSize, r);
        iov_.push_back(iovec{h, kHdr});
        if (carries && r.length > 0) iov_.push_back(iovec{wr.local.addr, r.length});
        outstanding_.push_back(Outstanding{r.seq, wr.tag, wr.opcode, wr.signaled, wr.local.addr,
                                           static_cast<uint32_t>(wr.local.length)});
      }
    }
    // A failed send shuts the connection down; OnClosed then flushes what was just queued.
    // Payloads are borrowed, not copied, when the socket cannot take them at once: a posted
    // WRITE's buffer stays untouched until its completion (which needs the peer's answer).
    (void)conn_->SendFramed(iov_, /*borrow=*/true);
    return Status::Ok();
  }

  Status PostRecv(std::span<const RecvRequest> rrs) {
    if (recv_cq_ == nullptr)
      return Status(Errc::kInvalidArgument, "endpoint has no receive completion queue");
    for (const RecvRequest& rr : rrs) {
      if (rr.buffer.length > 0 && rr.buffer.addr == nullptr) {
        return Status(Errc::kInvalidArgument, "receive with a null buffer");
      }
    }
    std::vector<Completion> matched;
    {
      std::lock_guard lk(recv_mu_);
      if (!alive_) return Status(FabricErrc::kPeerGone, "tcp endpoint to " + peer_node_);
      if (posted_.size() + rrs.size() > max_recv_) {
        return Status(FabricErrc::kQueueFull, std::to_string(posted_.size()) +
                                                  " receives already posted (max " +
                                                  std::to_string(max_recv_) + ")");
      }
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

  Result<std::unique_ptr<RemoteRegion>> Attach(const RegionDescriptor& d) {
    if (d.provider != Provider::kTcp) {
      return Status(FabricErrc::kWrongProvider,
                    "descriptor of provider " + std::string(ProviderName(d.provider)) + " on a tcp endpoint");
    }
    if (!alive_) return Status(FabricErrc::kPeerGone, "tcp endpoint to " + peer_node_);
    return std::unique_ptr<RemoteRegion>(new TcpRemote(d, id_));
  }

  Status SendControl(std::span<const std::byte> message) {
    if (message.size() > (1u << 20))
      return Status(Errc::kInvalidArgument, "control message longer than 1 MiB");
    if (!alive_) return Status(FabricErrc::kPeerGone, "tcp endpoint to " + peer_node_);
    return conn_->Send(wire::kFrameControl, 0, message);
  }

  Result<std::string> RecvControl(std::chrono::nanoseconds timeout) {
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, timeout, [&] { return !control_.empty() || !alive_; });
    if (!control_.empty()) {
      std::string m = std::move(control_.front());
      control_.pop_front();
      return m;
    }
    if (!alive_) return Status(FabricErrc::kPeerGone, "tcp endpoint to " + peer_node_);
    return Status(Errc::kTimeout, "no control message from " + peer_node_);
  }

  Status AwaitHelloAck() {
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, timeout_, [&] { return handshake_done_ || !handshake_.ok() || !alive_; });
    if (!handshake_.ok()) return handshake_;
    if (handshake_done_) return Status::Ok();
    if (!alive_) return Status(FabricErrc::kPeerGone, "tcp connect: the acceptor closed the connection");
    return Status(Errc::kTimeout, "tcp connect: no answer (is anyone calling Accept?)");
  }

  void Close() {
    if (closed_.exchange(true)) return;
    if (conn_) {
      conn_->ClearHandler();
      conn_->Close();
    }
    MarkGone(Status(FabricErrc::kPeerGone, "endpoint closed locally"));
  }

  TcpCore& fab_;
  const uint64_t id_;
  SoftCq* send_cq_;
  SoftCq* recv_cq_;
  const uint32_t max_send_, max_recv_;
  const std::chrono::milliseconds timeout_;
  std::shared_ptr<Conn> conn_;
  std::string peer_node_;
  uint64_t peer_id_ = 0;
  std::atomic<bool> alive_{true};
  std::atomic<bool> closed_{false};

  // Post() state (one posting thread at a time).
  std::vector<std::byte> scratch_;
  std::vector<iovec> iov_;

  std::mutex out_mu_;
  std::deque<Outstanding> outstanding_;
  uint64_t next_seq_ = 1;

  std::mutex recv_mu_;
  std::deque<RecvRequest> posted_;
  std::deque<Arrival> arrivals_;

  std::mutex mu_;
  std::condition_variable cv_;
  Status gone_reason_;
  std::deque<std::string> control_;
  bool handshake_done_ = false;
  Status handshake_;
};

class TcpEndpoint : public Endpoint {
 public:
  TcpEndpoint(std::shared_ptr<TcpCore> fab, std::shared_ptr<TcpEpCore> core)
      : fab_(std::move(fab)), core_(std::move(core)) {}
  ~TcpEndpoint() override { core_->Close(); }
  uint64_t id() const noexcept override { return core_->id_; }
  Provider provider() const noexcept override { return Provider::kTcp; }
  const std::string& peer() const noexcept override { return core_->peer_node_; }
  bool connected() const noexcept override { return core_->alive_.load(std::memory_order_acquire); }
  Status Post(std::span<const WorkRequest> wrs) override { return core_->Post(wrs); }
  Status PostRecv(std::span<const RecvRequest> rrs) override { return core_->PostRecv(rrs); }
  Result<std::unique_ptr<RemoteRegion>> Attach(const RegionDescriptor& d) override {
    return core_->Attach(d);
  }
  Result<std::unique_ptr<Grant>> GrantAccess(Region& region, uint64_t offset, uint64_t length,
                                             uint32_t access) override {
    auto* r = dynamic_cast<TcpRegion*>(&region);
    if (r == nullptr || r->core() != fab_.get()) {
      return Status(Errc::kInvalidArgument, "GrantAccess: the region is not registered with this tcp fabric");
    }
    RDMQ_RETURN_IF_ERROR(CheckGrant(*r, offset, length, access));
    const uint64_t key = fab_->AddKey({r->data() + offset, length, access, core_->id_});
    return std::unique_ptr<Grant>(new TcpGrant(fab_, r->Describe(key, offset, length, access)));
  }
  Status SendControl(std::span<const std::byte> m) override { return core_->SendControl(m); }
  Result<std::string> RecvControl(std::chrono::nanoseconds t) override { return core_->RecvControl(t); }
  void Close() override { core_->Close(); }

 private:
  std::shared_ptr<TcpCore> fab_;
  std::shared_ptr<TcpEpCore> core_;
};

class TcpFabric : public Fabric {
 public:
  explicit TcpFabric(std::shared_ptr<TcpCore> core) : core_(std::move(core)) {}
  Provider provider() const noexcept override { return Provider::kTcp; }
  std::string address() const override { return core_->address; }

  Result<std::unique_ptr<Region>> Allocate(size_t size, uint32_t access) override {
    if (size == 0) return Status(Errc::kInvalidArgument, "Allocate of 0 bytes");
    RDMQ_ASSIGN_OR_RETURN(Mapping m, MapAnonymous(RoundUp(size, PageSize())));
    std::byte* data = m.data();
    return std::unique_ptr<Region>(new TcpRegion(core_, std::move(m), data, size, access));
  }
  Result<std::unique_ptr<Region>> Register(void* addr, size_t size, int, uint64_t, uint32_t access) override {
    if (addr == nullptr || size == 0) return Status(Errc::kInvalidArgument, "Register: empty range");
    return std::unique_ptr<Region>(
        new TcpRegion(core_, Mapping(), static_cast<std::byte*>(addr), size, access));
  }
  Result<std::unique_ptr<CompletionQueue>> CreateCompletionQueue(size_t) override {
    return std::unique_ptr<CompletionQueue>(new TcpCq(core_));
  }

  Result<std::unique_ptr<Endpoint>> Connect(std::string_view address, const EndpointOptions& opts) override {
    RDMQ_RETURN_IF_ERROR(CheckOptions(opts));
    RDMQ_ASSIGN_OR_RETURN(std::string_view rest, StripScheme(address, "tcp"));
    RDMQ_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(rest));
    RDMQ_ASSIGN_OR_RETURN(UniqueFd fd, ConnectTcp(hp.host, hp.port, opts.connect_timeout));
    auto ep = std::make_shared<TcpEpCore>(*core_, opts);
    ep->peer_node_ = std::string(address);
    ep->conn_ = Conn::Create(core_->agent, std::move(fd), std::string(address));
    ep->conn_->Start(ep);
    wire::Hello h;
    h.endpoint_id = ep->id_;
    h.node = core_->address;
    const std::string hello = wire::EncodeHello(h);
    Status s = ep->conn_->Send(wire::kFrameHello, 0, coding::AsBytes(hello));
    if (s.ok()) s = ep->AwaitHelloAck();
    if (!s.ok()) {
      ep->Close();
      return s.WithContext("tcp connect to " + std::string(address));
    }
    return std::unique_ptr<Endpoint>(new TcpEndpoint(core_, ep));
  }

  Result<std::unique_ptr<Endpoint>> Accept(const EndpointOptions& opts,
                                           std::chrono::nanoseconds timeout) override {
    RDMQ_RETURN_IF_ERROR(CheckOptions(opts));
    if (!core_->listener)
      return Status(Errc::kFailedPrecondition, "Accept on a tcp fabric that does not listen");
    for (;;) {
      auto in = core_->accepts.Next(timeout);
      if (!in) return Status(Errc::kTimeout, "no incoming tcp connection on " + core_->address);
      auto ep = std::make_shared<TcpEpCore>(*core_, opts);
      ep->conn_ = in->conn;
      ep->peer_id_ = in->hello.endpoint_id;
      ep->peer_node_ = "tcp:" + in->conn->peer();
      in->conn->SetHandler(ep);
      if (in->conn->closed()) ep->MarkGone(Status(FabricErrc::kPeerGone, "peer left before accept"));
      wire::Hello h;
      h.endpoint_id = ep->id_;
      h.node = core_->address;
      const std::string hello = wire::EncodeHello(h);
      if (!in->conn->Send(wire::kFrameHelloAck, 0, coding::AsBytes(hello)).ok()) {
        ep->Close();
        continue;
      }
      return std::unique_ptr<Endpoint>(new TcpEndpoint(core_, ep));
    }
  }

 private:
  static Status CheckOptions(const EndpointOptions& o) { return CheckEndpointCqs<TcpCq>(o, "tcp"); }
  std::shared_ptr<TcpCore> core_;
};

}  // namespace

Result<std::unique_ptr<Fabric>> OpenTcp(const FabricOptions& options) {
  auto core = std::make_shared<TcpCore>();
  RDMQ_RETURN_IF_ERROR(core->Init(options));
  return std::unique_ptr<Fabric>(new TcpFabric(std::move(core)));
}

}  // namespace rdmq::fabric::internal
