// The verbs provider: rdma-core RC queue pairs (docs/fabric.md, "verbs").
//
// Connection setup: every Fabric that listens has a TCP bootstrap listener (served by its Asio
// agent, as in the tcp provider) and an rdma_cm listener on the same IP. A connector opens the
// bootstrap stream and sends a hello; Accept answers with the rdma_cm port and a token (its
// endpoint id); the connector resolves the address and route with rdma_cm, creates its QP and
// calls rdma_connect with the token as private data; Accept picks the connect request carrying
// its token, creates its QP and accepts. The bootstrap stream stays open beside the QP for
// control messages and liveness: when it breaks, the QP is moved to the error state so that
// everything outstanding completes with kPeerGone at once.
//
// Data path: one ibv_post_send per posted batch (a linked WR list), inline data up to the QP's
// max_inline, selective signalling with forced signals so the send queue never overflows, and
// checks of the attached descriptor's bounds, rights and alignment before anything reaches the
// wire (an RC QP that sees a remote error is dead, so refusing obvious mistakes locally keeps the
// connection). Grants are type-2 memory windows bound with IBV_WR_BIND_MW on the endpoint's QP
// and invalidated with IBV_WR_LOCAL_INV. Completion queues wait on a completion channel.
#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <linux/magic.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "conn.h"
#include "providers.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"
#include "util.h"
#include "wire.h"

namespace rdmq::fabric::internal {
namespace {

using namespace std::chrono_literals;

// ------------------------------------------------------------------------------ RAII owners

struct PdDeleter {
  void operator()(ibv_pd* p) const noexcept { ibv_dealloc_pd(p); }
};
struct MrDeleter {
  void operator()(ibv_mr* p) const noexcept { ibv_dereg_mr(p); }
};
struct MwDeleter {
  void operator()(ibv_mw* p) const noexcept { ibv_dealloc_mw(p); }
};
struct CqDeleter {
  void operator()(ibv_cq* p) const noexcept { ibv_destroy_cq(p); }
};
struct CompChannelDeleter {
  void operator()(ibv_comp_channel* p) const noexcept { ibv_destroy_comp_channel(p); }
};
struct CmChannelDeleter {
  void operator()(rdma_event_channel* p) const noexcept { rdma_destroy_event_channel(p); }
};
struct CmIdDeleter {
  void operator()(rdma_cm_id* p) const noexcept {
    if (p->qp != nullptr) rdma_destroy_qp(p);
    rdma_destroy_id(p);
  }
};
struct DeviceListDeleter {
  void operator()(ibv_context** p) const noexcept { rdma_free_devices(p); }
};
using PdPtr = std::unique_ptr<ibv_pd, PdDeleter>;
using MrPtr = std::unique_ptr<ibv_mr, MrDeleter>;
using MwPtr = std::unique_ptr<ibv_mw, MwDeleter>;
using CqPtr = std::unique_ptr<ibv_cq, CqDeleter>;
using CompChannelPtr = std::unique_ptr<ibv_comp_channel, CompChannelDeleter>;
using CmChannelPtr = std::unique_ptr<rdma_event_channel, CmChannelDeleter>;
using CmIdPtr = std::unique_ptr<rdma_cm_id, CmIdDeleter>;  // also destroys its QP
using DeviceListPtr = std::unique_ptr<ibv_context*, DeviceListDeleter>;

constexpr uint32_t kInternalReserve = 8;  // send-queue slots kept for binds and invalidations
constexpr uint64_t kRecvBit = 1ULL << 63;

int ToIbvAccess(uint32_t a) {
  // Local write is needed for READ targets, receives and any remote write or atomic; a region
  // registered for remote reads only gets none, so read-only mappings (sealed log segments,
  // which the storage engine maps PROT_READ) can be registered too.
  int f = (a & (kLocalWrite | kRemoteWrite | kRemoteAtomic)) != 0 ? IBV_ACCESS_LOCAL_WRITE : 0;
  if (a & kRemoteRead) f |= IBV_ACCESS_REMOTE_READ;
  if (a & kRemoteWrite) f |= IBV_ACCESS_REMOTE_WRITE;
  if (a & kRemoteAtomic) f |= IBV_ACCESS_REMOTE_ATOMIC;
  return f;
}

// `op` is the operation the completion is for (kRecv for receives): a message that does not fit
// its receive buffer shows up as a local QP operation or length error at the receiver and as a
// remote operation or invalid-request error at the sender (rdma_rxe and RNICs differ).
FabricErrc MapWcStatus(ibv_wc_status s, bool peer_gone, Opcode op) {
  const bool message = op == Opcode::kRecv || op == Opcode::kSend || op == Opcode::kWriteImm;
  if (message && (s == IBV_WC_LOC_QP_OP_ERR || s == IBV_WC_REM_OP_ERR)) return FabricErrc::kTooLong;
  switch (s) {
    case IBV_WC_SUCCESS:
      return FabricErrc::kOk_;
    case IBV_WC_WR_FLUSH_ERR:
      return peer_gone ? FabricErrc::kPeerGone : FabricErrc::kFlushed;
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_MW_BIND_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
      return FabricErrc::kAccessDenied;
    case IBV_WC_LOC_LEN_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
      return FabricErrc::kTooLong;
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return FabricErrc::kRnr;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_REM_ABORT_ERR:
    case IBV_WC_RESP_TIMEOUT_ERR:
      return FabricErrc::kPeerGone;
    default:
      return FabricErrc::kProtocol;
  }
}

Status CmError(const std::string& what) { return Status::FromErrno(errno, what); }

// Waits for the next event on `ch` (up to `timeout`); the caller acks it.
Result<rdma_cm_event*> NextCmEvent(rdma_event_channel* ch, std::chrono::milliseconds timeout) {
  pollfd p{ch->fd, POLLIN, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  if (rc == 0)
    return Status(Errc::kTimeout, "rdma_cm: no event within " + std::to_string(timeout.count()) + " ms");
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev) != 0) return CmError("rdma_get_cm_event");
  return ev;
}

// Waits for an event of type `want` on `ch`; anything else is an error naming what came.
Status ExpectCmEvent(rdma_event_channel* ch, rdma_cm_event_type want, std::chrono::milliseconds timeout,
                     const std::string& what) {
  RDMQ_ASSIGN_OR_RETURN(rdma_cm_event * ev, NextCmEvent(ch, timeout));
  const rdma_cm_event_type got = ev->event;
  const int status = ev->status;
  rdma_ack_cm_event(ev);
  if (got != want) {
    return Status(FabricErrc::kPeerGone, what + ": rdma_cm reported " + rdma_event_str(got) + " (status " +
                                             std::to_string(status) + ") instead of " + rdma_event_str(want));
  }
  return Status::Ok();
}

std::string BackingName(int fd) {
  if (fd < 0) return "anonymous memory";
  struct statfs sf;
  if (::fstatfs(fd, &sf) != 0) return "unknown backing";
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode)) return "a character device (devdax?)";
  switch (static_cast<unsigned long>(sf.f_type)) {
    case TMPFS_MAGIC:
      return "tmpfs/memfd";
    case HUGETLBFS_MAGIC:
      return "hugetlbfs";
    default:
      return "a page-cache file (filesystem type 0x" + [&] {
        char b[32];
        std::snprintf(b, sizeof b, "%lx", static_cast<unsigned long>(sf.f_type));
        return std::string(b);
      }() + ", possibly fsdax)";
  }
}

// ------------------------------------------------------------------------------ fabric state

class VerbsRegion;

class VerbsCore {
 public:
  Agent agent{"rdmq-verbs"};
  AcceptQueue accepts{agent};
  DeviceListPtr devices;
  ibv_context* ctx = nullptr;
  std::string device_name;
  uint8_t port = 1;
  PdPtr pd;
  ibv_device_attr attr{};
  bool has_mw = false;
  std::string ip;  // the IPv4 address this fabric listens on (or the device's)
  std::string address;
  std::shared_ptr<Listener> listener;
  CmChannelPtr listen_channel;
  CmIdPtr listen_id;
  uint16_t cm_port = 0;

  // Connect requests read by one Accept but meant for another: token -> id.
  std::mutex cm_mu;
  std::map<uint64_t, rdma_cm_id*> stashed_requests;

  ~VerbsCore() {
    agent.Stop();
    for (auto& [t, id] : stashed_requests) {
      rdma_reject(id, nullptr, 0);
      rdma_destroy_id(id);
    }
  }

  Status Init(const FabricOptions& o) {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list != nullptr) ibv_free_device_list(list);
    const std::string wanted =
        o.device.empty() ? "any device with an active port" : "device '" + o.device + "'";
    if (list == nullptr || n == 0) {
      return Status(FabricErrc::kNoDevice,
                    "ibv_get_device_list found no RDMA device (looked for " + wanted +
                        "; load rdma_rxe and run deploy/softroce.sh, or use fabric=shm|tcp)");
    }
    int nctx = 0;
    devices.reset(rdma_get_devices(&nctx));
    if (!devices || nctx == 0)
      return Status(FabricErrc::kNoDevice, "rdma_get_devices found no device (" + wanted + ")");
    for (int i = 0; i < nctx && ctx == nullptr; ++i) {
      ibv_context* c = devices.get()[i];
      const std::string name = ibv_get_device_name(c->device);
      if (!o.device.empty() && name != o.device) continue;
      ibv_device_attr a{};
      if (ibv_query_device(c, &a) != 0) continue;
      for (uint8_t p = 1; p <= a.phys_port_cnt; ++p) {
        ibv_port_attr pa{};
        if (ibv_query_port(c, p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
          ctx = c;
          port = p;
          attr = a;
          device_name = name;
          break;
        }
      }
    }
    if (ctx == nullptr)
      return Status(FabricErrc::kNoDevice,
                    "no " + wanted + " among " + std::to_string(nctx) + " RDMA devices");
    pd.reset(ibv_alloc_pd(ctx));
    if (!pd) return CmError("ibv_alloc_pd on " + device_name);
    has_mw = (attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0 ||
             (attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2A) != 0;
    if (o.listen.empty()) return Status::Ok();
    std::string_view l = o.listen;
    if (l.substr(0, 6) == "verbs:") l.remove_prefix(6);
    RDMQ_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(l));
    ip = hp.host.empty() ? DeviceIpv4() : hp.host;
    if (ip.empty()) {
      return Status(FabricErrc::kNoDevice, "device " + device_name + " port " + std::to_string(port) +
                                               " has no IPv4 GID; give FabricOptions.listen an address");
    }
    std::string bound;
    RDMQ_ASSIGN_OR_RETURN(UniqueFd fd, ListenTcp(ip, hp.port, &bound));
    address = "verbs:" + bound;
    listener = Listener::Start(agent, std::move(fd), [this](UniqueFd f, std::string peer) {
      accepts.OnAccept(std::move(f), std::move(peer));
    });
    // The rdma_cm listener on the same IP, any port.
    listen_channel.reset(rdma_create_event_channel());
    if (!listen_channel) return CmError("rdma_create_event_channel");
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(listen_channel.get(), &id, nullptr, RDMA_PS_TCP) != 0)
      return CmError("rdma_create_id");
    listen_id.reset(id);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    if (::inet_pton(AF_INET, ip.c_str(), &sin.sin_addr) != 1) {
      return Status(Errc::kInvalidArgument, "verbs listen address '" + ip + "' is not an IPv4 address");
    }
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&sin)) != 0) return CmError("rdma_bind_addr " + ip);
    if (rdma_listen(id, 64) != 0) return CmError("rdma_listen on " + ip);
    cm_port = ntohs(rdma_get_src_port(id));
    if (id->verbs != nullptr && id->verbs != ctx) {
      return Status(
          FabricErrc::kNoDevice,
          ip + " belongs to device " + ibv_get_device_name(id->verbs->device) + ", not " + device_name);
    }
    return Status::Ok();
  }

  // The first IPv4-mapped GID of the port (RoCE v2), as dotted quad; "" if none.
  std::string DeviceIpv4() const {
    ibv_port_attr pa{};
    if (ibv_query_port(ctx, port, &pa) != 0) return "";
    for (int i = 0; i < pa.gid_tbl_len; ++i) {
      ibv_gid gid{};
      if (ibv_query_gid(ctx, port, i, &gid) != 0) continue;
      static const uint8_t kV4Prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
      if (std::memcmp(gid.raw, kV4Prefix, 12) == 0) {
        char b[INET_ADDRSTRLEN];
        ::inet_ntop(AF_INET, gid.raw + 12, b, sizeof b);
        return b;
      }
    }
    return "";
  }

  // Registers [addr, addr+len) with `access`; falls back to on-demand paging; says which
  // backing to use when nothing works.
  // `window`: the MR a memory window is bound to (always needs MW_BIND). Other MRs get MW_BIND
  // only when writable: the kernel pins MW_BIND memory for writing, which a read-only mapping
  // (a sealed log segment) refuses.
  Result<MrPtr> RegisterMr(void* addr, size_t len, uint32_t access, int fd, bool window = false) {
    const bool writable = (access & (kLocalWrite | kRemoteWrite | kRemoteAtomic)) != 0;
    const int flags = ToIbvAccess(access) | (has_mw && (writable || window) ? IBV_ACCESS_MW_BIND : 0);
    MrPtr mr(ibv_reg_mr(pd.get(), addr, len, flags));
    if (mr) return mr;
    const int err1 = errno;
    mr.reset(ibv_reg_mr(pd.get(), addr, len, flags | IBV_ACCESS_ON_DEMAND));
    if (mr) {
      RDMQ_LOG(kInfo, "fabric", "registered with on-demand paging")
          .kv("bytes", len)
          .kv("device", device_name);
      return mr;
    }
    const int err2 = errno;
    return Status(
        FabricErrc::kRegistration,
        "ibv_reg_mr of " + std::to_string(len) + " bytes of " + BackingName(fd) + " on " + device_name +
            " failed (" + std::strerror(err1) + "; with on-demand paging: " + std::strerror(err2) +
            "). Back the region with memfd/tmpfs, hugetlbfs or devdax (/dev/daxX.Y) instead of fsdax or "
            "page-cache files, or use a NIC with on-demand paging");
  }

  // Local-buffer registry for work requests that name no region.
  void AddRegion(VerbsRegion* r, std::byte* addr, size_t len) {
    std::unique_lock lk(regions_mu_);
    regions_[addr] = {r, len};
  }
  void RemoveRegion(std::byte* addr) {
    std::unique_lock lk(regions_mu_);
    regions_.erase(addr);
  }
  VerbsRegion* FindRegion(const void* p, size_t len) {
    std::shared_lock lk(regions_mu_);
    auto it = regions_.upper_bound(static_cast<std::byte*>(const_cast<void*>(p)));
    if (it == regions_.begin()) return nullptr;
    --it;
    const auto* b = static_cast<const std::byte*>(p);
    if (b + len <= it->first + it->second.second) return it->second.first;
    return nullptr;
  }

 private:
  std::shared_mutex regions_mu_;
  std::map<std::byte*, std::pair<VerbsRegion*, size_t>> regions_;
};

class VerbsRegion : public LocalRegion {
 public:
  VerbsRegion(std::shared_ptr<VerbsCore> core, Mapping owned, std::byte* data, size_t size, uint32_t access,
              int fd)
      : LocalRegion(Provider::kVerbs, core->address, std::move(owned), data, size, access),
        core_(std::move(core)),
        fd_(fd) {}
  ~VerbsRegion() override { core_->RemoveRegion(data_); }
  Status Init() {
    RDMQ_ASSIGN_OR_RETURN(mr_, core_->RegisterMr(data_, size_, access_, fd_));
    core_->AddRegion(this, data_, size_);
    return Status::Ok();
  }
  RegionDescriptor Descriptor() const override { return Describe(mr_->rkey, 0, size_, access_); }
  Result<RegionDescriptor> Descriptor(uint32_t access) const override {
    RDMQ_RETURN_IF_ERROR(CheckSubset(access));
    if (access == access_) return Descriptor();
    // Fewer rights need their own registration: the rkey is what the NIC enforces.
    std::lock_guard lk(mu_);
    auto it = extra_.find(access);
    if (it == extra_.end()) {
      RDMQ_ASSIGN_OR_RETURN(MrPtr mr, core_->RegisterMr(data_, size_, access, fd_));
      it = extra_.emplace(access, std::move(mr)).first;
    }
    return Describe(it->second->rkey, 0, size_, access);
  }
  ibv_mr* mr() const noexcept { return mr_.get(); }
  VerbsCore* core() const noexcept { return core_.get(); }

 private:
  std::shared_ptr<VerbsCore> core_;
  int fd_;
  MrPtr mr_;
  mutable std::mutex mu_;
  mutable std::map<uint32_t, MrPtr> extra_;
};

class VerbsRemote : public RemoteRegion {
 public:
  VerbsRemote(RegionDescriptor d, uint64_t endpoint_id) : desc_(std::move(d)), endpoint_id_(endpoint_id) {}
  const RegionDescriptor& descriptor() const noexcept override { return desc_; }
  Status WaitWhileEqual(uint64_t, uint64_t, std::chrono::nanoseconds) override {
    return Status(Errc::kUnsupported, "verbs: waiting on a remote word; the owner notifies with a SEND");
  }
  Status Wake(uint64_t) override {
    return Status(Errc::kUnsupported,
                  "verbs: waking a remote word; notify the owner with a SEND or WRITE_WITH_IMM");
  }
  const std::byte* mapped() const noexcept override { return nullptr; }
  RegionDescriptor desc_;
  uint64_t endpoint_id_;
};

// ------------------------------------------------------------------------------ CQ

class VerbsEpCore;

// A bind or invalidation the provider posts for itself and waits for.
struct InternalOp {
  std::atomic<int> state{0};  // 0 pending, 1 done
  ibv_wc_status status = IBV_WC_SUCCESS;
};

class VerbsCq : public CompletionQueue {
 public:
  static Result<std::unique_ptr<VerbsCq>> Create(std::shared_ptr<VerbsCore> core, size_t depth) {
    auto q = std::unique_ptr<VerbsCq>(new VerbsCq(std::move(core)));
    q->channel_.reset(ibv_create_comp_channel(q->core_->ctx));
    if (!q->channel_) return CmError("ibv_create_comp_channel");
    ::fcntl(q->channel_->fd, F_SETFL, ::fcntl(q->channel_->fd, F_GETFL) | O_NONBLOCK);
    const int cqe =
        static_cast<int>(std::clamp<size_t>(depth, 16, static_cast<size_t>(q->core_->attr.max_cqe)));
    q->cq_.reset(ibv_create_cq(q->core_->ctx, cqe, nullptr, q->channel_.get(), 0));
    if (!q->cq_) return CmError("ibv_create_cq with " + std::to_string(cqe) + " entries");
    q->event_fd_.Reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!q->event_fd_.valid()) return CmError("eventfd");
    return q;
  }
  ~VerbsCq() override {
    if (unacked_ > 0) ibv_ack_cq_events(cq_.get(), unacked_);
  }

  ibv_cq* cq() const noexcept { return cq_.get(); }

  void AddEndpoint(uint32_t qp_num, std::shared_ptr<VerbsEpCore> ep) {
    std::lock_guard lk(mu_);
    eps_[qp_num] = std::move(ep);
  }
  void RemoveEndpoint(uint32_t qp_num) {
    std::lock_guard lk(mu_);
    eps_.erase(qp_num);
  }

  // Software completions (operations refused before reaching the NIC, flushes).
  void PushSoft(const Completion& c) {
    {
      std::lock_guard lk(mu_);
      stash_.push_back(c);
    }
    const uint64_t one = 1;
    (void)!::write(event_fd_.get(), &one, sizeof one);
  }

  size_t Poll(std::span<Completion> out) override {
    std::lock_guard lk(mu_);
    size_t n = 0;
    while (n < out.size() && !stash_.empty()) {
      out[n++] = stash_.front();
      stash_.pop_front();
    }
    while (n < out.size()) {
      ibv_wc wc[16];
      const int got = ibv_poll_cq(cq_.get(), 16, wc);
      if (got <= 0) break;
      for (int i = 0; i < got; ++i) {
        Completion c;
        if (Translate(wc[i], &c)) {
          if (n < out.size()) {
            out[n++] = c;
          } else {
            stash_.push_back(c);
          }
        }
      }
    }
    return n;
  }

  // Processes hardware completions without returning them (they wait in the stash): used by a
  // thread that waits for one of the provider's own operations.
  void Progress() {
    std::lock_guard lk(mu_);
    bool stashed = false;
    for (;;) {
      ibv_wc wc[16];
      const int got = ibv_poll_cq(cq_.get(), 16, wc);
      if (got <= 0) break;
      for (int i = 0; i < got; ++i) {
        Completion c;
        if (Translate(wc[i], &c)) {
          stash_.push_back(c);
          stashed = true;
        }
      }
    }
    if (stashed) {
      const uint64_t one = 1;
      (void)!::write(event_fd_.get(), &one, sizeof one);
    }
  }

  Status Wait(std::chrono::nanoseconds timeout) override {
    {
      std::lock_guard lk(mu_);
      if (!stash_.empty()) return Status::Ok();
    }
    if (ibv_req_notify_cq(cq_.get(), 0) != 0) return CmError("ibv_req_notify_cq");
    // Anything that arrived before the notification was armed.
    {
      std::lock_guard lk(mu_);
      ibv_wc wc;
      while (ibv_poll_cq(cq_.get(), 1, &wc) == 1) {
        Completion c;
        if (Translate(wc, &c)) stash_.push_back(c);
      }
      if (!stash_.empty()) return Status::Ok();
    }
    pollfd p[2] = {{channel_->fd, POLLIN, 0}, {event_fd_.get(), POLLIN, 0}};
    const int ms = static_cast<int>(std::max<int64_t>(0, (timeout.count() + 999'999) / 1'000'000));
    int rc;
    do {
      rc = ::poll(p, 2, ms);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) return Status(Errc::kTimeout, "completion queue wait");
    if (p[0].revents & POLLIN) {
      ibv_cq* cq;
      void* ctx;
      if (ibv_get_cq_event(channel_.get(), &cq, &ctx) == 0) {
        if (++unacked_ >= 64) {
          ibv_ack_cq_events(cq_.get(), unacked_);
          unacked_ = 0;
        }
      }
    }
    if (p[1].revents & POLLIN) {
      uint64_t v;
      (void)!::read(event_fd_.get(), &v, sizeof v);
    }
    return Status::Ok();
  }

 private:
  explicit VerbsCq(std::shared_ptr<VerbsCore> core) : core_(std::move(core)) {}
  bool Translate(const ibv_wc& wc, Completion* out);  // requires mu_

  std::shared_ptr<VerbsCore> core_;
  CompChannelPtr channel_;
  CqPtr cq_;
  UniqueFd event_fd_;
  unsigned unacked_ = 0;
  std::mutex mu_;
  std::deque<Completion> stash_;
  std::unordered_map<uint32_t, std::shared_ptr<VerbsEpCore>> eps_;
};

// ------------------------------------------------------------------------------ endpoint

struct SendSlot {
  uint64_t tag = 0;
  Opcode opcode = Opcode::kWrite;
  bool user_signaled = false;
  uint32_t length = 0;
  std::shared_ptr<InternalOp> internal;  // set for binds/invalidations
};

class VerbsEpCore : public ConnHandler, public std::enable_shared_from_this<VerbsEpCore> {
 public:
  VerbsEpCore(VerbsCore& fab, const EndpointOptions& o)
      : fab_(fab),
        id_(NextEndpointId()),
        send_cq_(static_cast<VerbsCq*>(o.send_cq)),
        recv_cq_(static_cast<VerbsCq*>(o.recv_cq)),
        max_send_(o.max_send_wr),
        max_recv_(o.max_recv_wr),
        want_inline_(o.max_inline),
        timeout_(o.connect_timeout),
        send_slots_(o.max_send_wr + kInternalReserve),
        recv_tags_(std::max<uint32_t>(o.max_recv_wr, 1)) {}

  ~VerbsEpCore() override = default;

  // ---- bootstrap stream (agent thread)
  void OnFrame(uint8_t type, uint16_t, std::span<const std::byte> payload, std::vector<UniqueFd>&) override {
    std::lock_guard lk(mu_);
    if (type == wire::kFrameControl) {
      control_.emplace_back(coding::AsChars(payload));
    } else if (type == wire::kFrameHelloAck) {
      auto h = wire::DecodeHello(payload);
      if (h.ok()) {
        hello_ = *h;
        handshake_done_ = true;
      } else {
        handshake_ = h.status();
      }
    } else {
      RDMQ_LOG(kWarn, "fabric", "unexpected verbs bootstrap frame").kv("type", type).kv("peer", peer_node_);
    }
    cv_.notify_all();
  }
  void OnClosed(const Status& why) override { MarkGone(why); }

  // The peer is gone (or we close): move the QP to the error state so that every outstanding
  // work request completes (flushed, reported as kPeerGone).
  void MarkGone(const Status& why) {
    {
      std::lock_guard lk(mu_);
      if (!alive_.exchange(false)) return;
      gone_reason_ = why;
      cv_.notify_all();
    }
    if (qp_ != nullptr) {
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_ERR;
      ibv_modify_qp(qp_, &a, IBV_QP_STATE);
    }
  }

  // ---- QP setup
  Status CreateQp(rdma_cm_id* id) {
    if (id->verbs != fab_.ctx) {
      return Status(FabricErrc::kNoDevice,
                    "rdma_cm chose device " +
                        std::string(id->verbs ? ibv_get_device_name(id->verbs->device) : "?") +
                        " but this fabric uses " + fab_.device_name);
    }
    ibv_qp_init_attr a{};
    a.send_cq = send_cq_->cq();
    a.recv_cq = (recv_cq_ ? recv_cq_ : send_cq_)->cq();
    a.qp_type = IBV_QPT_RC;
    a.sq_sig_all = 0;
    a.cap.max_send_wr = max_send_ + kInternalReserve;
    a.cap.max_recv_wr = std::max<uint32_t>(max_recv_, 1);
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = want_inline_;
    if (rdma_create_qp(id, fab_.pd.get(), &a) != 0) {
      a.cap.max_inline_data = 0;  // the device may allow less inline data than asked for
      if (rdma_create_qp(id, fab_.pd.get(), &a) != 0) {
        return CmError("rdma_create_qp (send " + std::to_string(a.cap.max_send_wr) + ", recv " +
                       std::to_string(a.cap.max_recv_wr) + " WRs)");
      }
    }
    max_inline_ = a.cap.max_inline_data;
    qp_ = id->qp;
    qp_num_ = qp_->qp_num;
    const int local_write = IBV_ACCESS_LOCAL_WRITE;  // an int: ibv_reg_mr's macro mixes enum types
    scratch_mr_.reset(ibv_reg_mr(fab_.pd.get(), scratch_, sizeof scratch_, local_write));
    if (!scratch_mr_) return CmError("ibv_reg_mr (8-byte atomic scratch)");
    return Status::Ok();
  }

  rdma_conn_param ConnParam(const void* priv, uint8_t priv_len) const {
    rdma_conn_param p{};
    p.private_data = priv;
    p.private_data_len = priv_len;
    const int rd = std::min(16, fab_.attr.max_qp_rd_atom);
    const int init = std::min(16, fab_.attr.max_qp_init_rd_atom);
    p.responder_resources = static_cast<uint8_t>(std::max(rd, 1));
    p.initiator_depth = static_cast<uint8_t>(std::max(init, 1));
    p.retry_count = 7;
    p.rnr_retry_count = 7;  // a SEND waits for its receive, as on the other providers
    return p;
  }

  void Register() {
    auto self = shared_from_this();
    send_cq_->AddEndpoint(qp_num_, self);
    if (recv_cq_ != nullptr && recv_cq_ != send_cq_) recv_cq_->AddEndpoint(qp_num_, self);
  }

  // ---- completions (called by VerbsCq under its lock)
  bool OnSendCompletion(const ibv_wc& wc, Completion* out) {
    const uint64_t seq = wc.wr_id;
    SendSlot& s = send_slots_[seq % send_slots_.size()];
    const uint64_t done = send_done_.load(std::memory_order_relaxed);
    if (seq + 1 > done) send_done_.store(seq + 1, std::memory_order_release);
    if (wc.status != IBV_WC_SUCCESS && wc.status != IBV_WC_WR_FLUSH_ERR) {
      failure_status_.store(wc.status, std::memory_order_relaxed);
      failed_.store(true, std::memory_order_release);
      RDMQ_LOG(kInfo, "fabric", "work request failed; the connection is now in error")
          .kv("peer", peer_node_)
          .kv("opcode", OpcodeName(s.opcode))
          .kv("status", ibv_wc_status_str(wc.status));
    }
    if (s.internal) {
      s.internal->status = wc.status;
      s.internal->state.store(1, std::memory_order_release);
      s.internal.reset();
      return false;
    }
    FabricErrc e = MapWcStatus(wc.status, !alive_.load(std::memory_order_acquire), s.opcode);
    if (e == FabricErrc::kOk_ && !s.user_signaled) return false;
    if (IsRemoteError(wc.status) && PeerVanished()) e = FabricErrc::kPeerGone;  // a forced signal
    *out = MakeCompletion(s.tag, s.opcode, id_, e);
    if (e == FabricErrc::kOk_) {
      if (s.opcode == Opcode::kRead) out->byte_len = s.length;
      if (s.opcode == Opcode::kFetchAdd || s.opcode == Opcode::kCompareSwap) out->byte_len = 8;
    }
    return true;
  }

  bool OnRecvCompletion(const ibv_wc& wc, Completion* out) {
    const uint64_t seq = wc.wr_id & ~kRecvBit;
    const uint64_t tag = recv_tags_[seq % recv_tags_.size()];
    recv_done_.store(seq + 1, std::memory_order_release);
    const FabricErrc e = MapWcStatus(wc.status, !alive_.load(std::memory_order_acquire), Opcode::kRecv);
    if (wc.status != IBV_WC_SUCCESS && wc.status != IBV_WC_WR_FLUSH_ERR) {
      failure_status_.store(wc.status, std::memory_order_relaxed);
      failed_.store(true, std::memory_order_release);
      RDMQ_LOG(kWarn, "fabric", "receive failed; the connection is now in error")
          .kv("peer", peer_node_)
          .kv("status", ibv_wc_status_str(wc.status))
          .kv("vendor_err", wc.vendor_err);
    }
    *out = MakeCompletion(tag, Opcode::kRecv, id_, e);
    if (e == FabricErrc::kOk_) {
      out->byte_len = wc.byte_len;
      if (wc.wc_flags & IBV_WC_WITH_IMM) {
        out->has_imm = true;
        out->imm = ntohl(wc.imm_data);
      }
    }
    return true;
  }

  static bool IsRemoteError(ibv_wc_status s) {
    return s == IBV_WC_REM_ACCESS_ERR || s == IBV_WC_REM_OP_ERR || s == IBV_WC_REM_INV_REQ_ERR;
  }

  // A peer that dies mid-operation may answer in-flight requests with a remote access error
  // (its process exit tears down its memory registrations before its QP). Such an error is
  // reported as kPeerGone when the bootstrap stream shows the peer gone within a short grace
  // period. Costs up to 100 ms, only on a remote error, which ends the connection anyway.
  bool PeerVanished() {
    const uint64_t deadline = MonoNanos() + 100'000'000ULL;
    for (;;) {
      if (!alive_.load(std::memory_order_acquire)) return true;
      if (conn_) {
        pollfd p{conn_->fd(), POLLRDHUP, 0};
        if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) return true;
      }
      if (MonoNanos() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  // ---- posting
  Status CheckUsable() const {
    if (!alive_.load(std::memory_order_acquire))
      return Status(FabricErrc::kPeerGone, "verbs endpoint to " + peer_node_);
    if (failed_.load(std::memory_order_acquire)) {
      return Status(FabricErrc::kFlushed,
                    "verbs endpoint to " + peer_node_ + " failed after an error completion (" +
                        ibv_wc_status_str(static_cast<ibv_wc_status>(failure_status_.load())) + ")");
    }
    return Status::Ok();
  }

  // The lkey for `len` bytes at `addr`, from `region` or the fabric's registry.
  Result<uint32_t> LocalKey(const LocalBuffer& b) const {
    const VerbsRegion* r = b.region != nullptr ? dynamic_cast<const VerbsRegion*>(b.region) : nullptr;
    if (r == nullptr) r = fab_.FindRegion(b.addr, b.length);
    if (r == nullptr || r->core() != &fab_) {
      return Status(Errc::kInvalidArgument,
                    "local buffer is not in a region registered with this verbs fabric");
    }
    const auto* p = static_cast<const std::byte*>(b.addr);
    if (p < r->data() || p + b.length > r->data() + r->size()) {
      return Status(Errc::kInvalidArgument, "local buffer runs outside its region");
    }
    return r->mr()->lkey;
  }

  Status Post(std::span<const WorkRequest> wrs) {
    RDMQ_RETURN_IF_ERROR(CheckUsable());
    // Validate everything first: a malformed request posts nothing.
    prepared_.resize(wrs.size());
    size_t hw = 0;
    for (size_t i = 0; i < wrs.size(); ++i) {
      const WorkRequest& wr = wrs[i];
      RDMQ_RETURN_IF_ERROR(ValidateWorkRequest(wr));
      FabricErrc refused = FabricErrc::kOk_;
      if (wr.opcode != Opcode::kSend) {
        if (wr.remote->descriptor().provider != Provider::kVerbs ||
            static_cast<const VerbsRemote*>(wr.remote)->endpoint_id_ != id_) {
          return Status(Errc::kInvalidArgument, "remote region was not attached on this endpoint");
        }
        const RegionDescriptor& d = wr.remote->descriptor();
        const bool atomic = wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap;
        refused = CheckAccess(wr.opcode, d.access, d.length, wr.remote_offset, atomic ? 8 : wr.local.length,
                              d.base + wr.remote_offset);
      }
      uint32_t lkey = 0;
      const bool is_inline =
          (wr.opcode == Opcode::kWrite || wr.opcode == Opcode::kWriteImm || wr.opcode == Opcode::kSend) &&
          wr.local.length <= max_inline_;
      const bool atomic = wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap;
      if (refused == FabricErrc::kOk_ && !is_inline && wr.local.length > 0 &&
          !(atomic && wr.local.addr == nullptr)) {
        LocalBuffer b = wr.local;
        if (atomic) b.length = 8;
        RDMQ_ASSIGN_OR_RETURN(lkey, LocalKey(b));
      }
      prepared_[i] = {refused, lkey};
      if (refused == FabricErrc::kOk_) ++hw;
    }
    std::lock_guard lk(post_mu_);
    const uint64_t outstanding = send_seq_ - send_done_.load(std::memory_order_acquire);
    if (outstanding + hw > max_send_) {
      return Status(FabricErrc::kQueueFull, std::to_string(outstanding) + " work requests outstanding (max " +
                                                std::to_string(max_send_) +
                                                "); poll the send completion queue");
    }
    wr_.resize(hw);
    sge_.resize(hw);
    size_t k = 0;
    for (size_t i = 0; i < wrs.size(); ++i) {
      const WorkRequest& wr = wrs[i];
      if (prepared_[i].refused != FabricErrc::kOk_) {
        send_cq_->PushSoft(MakeCompletion(wr.tag, wr.opcode, id_, prepared_[i].refused));
        continue;
      }
      const uint64_t seq = send_seq_ + k;
      SendSlot& slot = send_slots_[seq % send_slots_.size()];
      slot = SendSlot{wr.tag, wr.opcode, wr.signaled, static_cast<uint32_t>(wr.local.length), nullptr};
      ibv_send_wr& s = wr_[k];
      s = ibv_send_wr{};
      s.wr_id = seq;
      s.next = k + 1 < hw ? &wr_[k + 1] : nullptr;
      ibv_sge& g = sge_[k];
      g.addr = reinterpret_cast<uint64_t>(wr.local.addr);
      g.length = static_cast<uint32_t>(wr.local.length);
      g.lkey = prepared_[i].lkey;
      s.sg_list = &g;
      s.num_sge = wr.local.length > 0 ? 1 : 0;
      const uint64_t raddr = wr.opcode == Opcode::kSend ? 0 : wr.remote->descriptor().base + wr.remote_offset;
      const uint32_t rkey =
          wr.opcode == Opcode::kSend ? 0 : static_cast<uint32_t>(wr.remote->descriptor().key);
      switch (wr.opcode) {
        case Opcode::kWrite:
          s.opcode = IBV_WR_RDMA_WRITE;
          break;
        case Opcode::kWriteImm:
          s.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
          s.imm_data = htonl(wr.imm);
          break;
        case Opcode::kRead:
          s.opcode = IBV_WR_RDMA_READ;
          break;
        case Opcode::kSend:
          s.opcode = IBV_WR_SEND;
          break;
        case Opcode::kFetchAdd:
        case Opcode::kCompareSwap:
          s.opcode = wr.opcode == Opcode::kFetchAdd ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP;
          s.wr.atomic.remote_addr = raddr;
          s.wr.atomic.rkey = rkey;
          s.wr.atomic.compare_add = wr.operand;
          s.wr.atomic.swap = wr.swap;
          g.length = 8;
          s.num_sge = 1;
          if (wr.local.addr == nullptr) {
            g.addr = reinterpret_cast<uint64_t>(scratch_);
            g.lkey = scratch_mr_->lkey;
          }
          break;
        default:
          break;
      }
      if (s.opcode == IBV_WR_RDMA_WRITE || s.opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
          s.opcode == IBV_WR_RDMA_READ) {
        s.wr.rdma.remote_addr = raddr;
        s.wr.rdma.rkey = rkey;
      }
      if ((s.opcode == IBV_WR_RDMA_WRITE || s.opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
           s.opcode == IBV_WR_SEND) &&
          wr.local.length > 0 && wr.local.length <= max_inline_) {
        s.send_flags |= IBV_SEND_INLINE;
      }
      // Selective signalling: the user's choice, plus a forced signal at least every half queue
      // so that slots are recycled even when the user signals nothing.
      if (wr.signaled || ++unsignaled_run_ >= std::max<uint32_t>(1, max_send_ / 2)) {
        s.send_flags |= IBV_SEND_SIGNALED;
        unsignaled_run_ = 0;
      }
      ++k;
    }
    if (hw == 0) return Status::Ok();
    ibv_send_wr* bad = nullptr;
    if (const int rc = ibv_post_send(qp_, wr_.data(), &bad); rc != 0) {
      // Nothing of the list beyond `bad` was posted; account for what was.
      const size_t posted = bad ? static_cast<size_t>(bad - wr_.data()) : 0;
      send_seq_ += posted;
      errno = rc;
      return CmError("ibv_post_send (" + std::to_string(posted) + " of " + std::to_string(hw) + " posted)");
    }
    send_seq_ += hw;
    return Status::Ok();
  }

  // Posts one of the provider's own signalled work requests and waits for it, driving the send
  // completion queue itself if nobody else does.
  Status RunInternal(ibv_send_wr wr, const std::string& what) {
    auto op = std::make_shared<InternalOp>();
    {
      std::lock_guard lk(post_mu_);
      RDMQ_RETURN_IF_ERROR(CheckUsable());
      if (send_seq_ - send_done_.load(std::memory_order_acquire) >= max_send_ + kInternalReserve) {
        return Status(FabricErrc::kQueueFull, what + ": send queue full");
      }
      const uint64_t seq = send_seq_;
      send_slots_[seq % send_slots_.size()] = SendSlot{0, Opcode::kWrite, false, 0, op};
      wr.wr_id = seq;
      wr.next = nullptr;
      wr.send_flags |= IBV_SEND_SIGNALED;
      ibv_send_wr* bad = nullptr;
      if (const int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) {
        send_slots_[seq % send_slots_.size()].internal.reset();
        errno = rc;
        return CmError(what + ": ibv_post_send");
      }
      ++send_seq_;
      unsignaled_run_ = 0;
    }
    const uint64_t deadline = MonoNanos() + 10'000'000'000ULL;
    while (op->state.load(std::memory_order_acquire) == 0) {
      if (MonoNanos() > deadline) return Status(Errc::kTimeout, what + ": no completion within 10 s");
      send_cq_->Progress();
      if (op->state.load(std::memory_order_acquire) == 0)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (op->status != IBV_WC_SUCCESS) {
      return Status(MapWcStatus(op->status, !alive_.load(), Opcode::kWrite),
                    what + ": " + ibv_wc_status_str(op->status));
    }
    return Status::Ok();
  }

  Status PostRecv(std::span<const RecvRequest> rrs) {
    if (recv_cq_ == nullptr)
      return Status(Errc::kInvalidArgument, "endpoint has no receive completion queue");
    RDMQ_RETURN_IF_ERROR(CheckUsable());
    std::lock_guard lk(recv_mu_);
    const uint64_t outstanding = recv_seq_ - recv_done_.load(std::memory_order_acquire);
    if (outstanding + rrs.size() > max_recv_) {
      return Status(FabricErrc::kQueueFull, std::to_string(outstanding) + " receives already posted (max " +
                                                std::to_string(max_recv_) + ")");
    }
    std::vector<ibv_recv_wr> wrs(rrs.size());
    std::vector<ibv_sge> sges(rrs.size());
    for (size_t i = 0; i < rrs.size(); ++i) {
      const RecvRequest& rr = rrs[i];
      uint32_t lkey = 0;
      if (rr.buffer.length > 0) {
        if (rr.buffer.addr == nullptr) return Status(Errc::kInvalidArgument, "receive with a null buffer");
        RDMQ_ASSIGN_OR_RETURN(lkey, LocalKey(rr.buffer));
      }
      const uint64_t seq = recv_seq_ + i;
      recv_tags_[seq % recv_tags_.size()] = rr.tag;
      sges[i] =
          ibv_sge{reinterpret_cast<uint64_t>(rr.buffer.addr), static_cast<uint32_t>(rr.buffer.length), lkey};
      wrs[i].wr_id = kRecvBit | seq;
      wrs[i].sg_list = &sges[i];
      wrs[i].num_sge = rr.buffer.length > 0 ? 1 : 0;
      wrs[i].next = i + 1 < rrs.size() ? &wrs[i + 1] : nullptr;
    }
    if (rrs.empty()) return Status::Ok();
    ibv_recv_wr* bad = nullptr;
    if (const int rc = ibv_post_recv(qp_, wrs.data(), &bad); rc != 0) {
      const size_t posted = bad ? static_cast<size_t>(bad - wrs.data()) : 0;
      recv_seq_ += posted;
      errno = rc;
      return CmError("ibv_post_recv");
    }
    recv_seq_ += rrs.size();
    return Status::Ok();
  }

  Status SendControl(std::span<const std::byte> message) {
    if (message.size() > (1u << 20))
      return Status(Errc::kInvalidArgument, "control message longer than 1 MiB");
    if (!alive_) return Status(FabricErrc::kPeerGone, "verbs endpoint to " + peer_node_);
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
    if (!alive_) return Status(FabricErrc::kPeerGone, "verbs endpoint to " + peer_node_);
    return Status(Errc::kTimeout, "no control message from " + peer_node_);
  }

  Result<wire::Hello> AwaitHelloAck() {
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, timeout_, [&] { return handshake_done_ || !handshake_.ok() || !alive_; });
    if (!handshake_.ok()) return handshake_;
    if (handshake_done_) return hello_;
    if (!alive_) return Status(FabricErrc::kPeerGone, "verbs connect: the acceptor closed the connection");
    return Status(Errc::kTimeout, "verbs connect: no answer (is anyone calling Accept?)");
  }

  void Close() {
    if (closed_.exchange(true)) return;
    if (conn_) {
      conn_->ClearHandler();
      conn_->Close();
    }
    MarkGone(Status(FabricErrc::kPeerGone, "endpoint closed locally"));
    if (cm_id_) rdma_disconnect(cm_id_.get());
    if (qp_ != nullptr) {
      // Let the flushes of everything outstanding reach the completion queues (as kPeerGone
      // completions for the user), then forget this QP there.
      const uint64_t deadline = MonoNanos() + 2'000'000'000ULL;
      while (MonoNanos() < deadline && (send_seq_ != send_done_.load() || recv_seq_ != recv_done_.load())) {
        send_cq_->Progress();
        if (recv_cq_ != nullptr && recv_cq_ != send_cq_) recv_cq_->Progress();
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      send_cq_->RemoveEndpoint(qp_num_);
      if (recv_cq_ != nullptr && recv_cq_ != send_cq_) recv_cq_->RemoveEndpoint(qp_num_);
    }
    cm_id_.reset();  // destroys the QP and the rdma_cm id
    cm_channel_.reset();
  }

  VerbsCore& fab_;
  const uint64_t id_;
  VerbsCq* send_cq_;
  VerbsCq* recv_cq_;
  const uint32_t max_send_, max_recv_, want_inline_;
  const std::chrono::milliseconds timeout_;
  uint32_t max_inline_ = 0;
  std::shared_ptr<Conn> conn_;
  std::string peer_node_;
  CmChannelPtr cm_channel_;
  CmIdPtr cm_id_;
  ibv_qp* qp_ = nullptr;
  uint32_t qp_num_ = 0;
  alignas(8) uint64_t scratch_[1] = {0};
  MrPtr scratch_mr_;

  std::atomic<bool> alive_{true};
  std::atomic<bool> closed_{false};
  std::atomic<bool> failed_{false};
  std::atomic<int> failure_status_{IBV_WC_SUCCESS};

  std::mutex post_mu_;
  std::vector<SendSlot> send_slots_;
  uint64_t send_seq_ = 0;
  std::atomic<uint64_t> send_done_{0};
  uint32_t unsignaled_run_ = 0;
  std::vector<ibv_send_wr> wr_;
  std::vector<ibv_sge> sge_;
  struct PreparedWr {
    FabricErrc refused;
    uint32_t lkey;
  };
  std::vector<PreparedWr> prepared_;

  std::mutex recv_mu_;
  std::vector<uint64_t> recv_tags_;
  uint64_t recv_seq_ = 0;
  std::atomic<uint64_t> recv_done_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  Status gone_reason_;
  std::deque<std::string> control_;
  bool handshake_done_ = false;
  Status handshake_;
  wire::Hello hello_;
};

bool VerbsCq::Translate(const ibv_wc& wc, Completion* out) {
  auto it = eps_.find(wc.qp_num);
  if (it == eps_.end()) return false;  // a QP that is gone
  if (wc.wr_id & kRecvBit) return it->second->OnRecvCompletion(wc, out);
  return it->second->OnSendCompletion(wc, out);
}

class VerbsGrant : public Grant {
 public:
  VerbsGrant(std::shared_ptr<VerbsCore> fab, std::shared_ptr<VerbsEpCore> ep, MrPtr mr, MwPtr mw,
             RegionDescriptor d)
      : fab_(std::move(fab)),
        ep_(std::move(ep)),
        mr_(std::move(mr)),
        mw_(std::move(mw)),
        desc_(std::move(d)) {}
  ~VerbsGrant() override {
    (void)Revoke();
    mw_.reset();  // deallocating a window also invalidates it
  }
  const RegionDescriptor& descriptor() const noexcept override { return desc_; }
  Status Revoke() override {
    if (revoked_) return Status::Ok();
    revoked_ = true;
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_LOCAL_INV;
    wr.invalidate_rkey = static_cast<uint32_t>(desc_.key);
    Status s = ep_->RunInternal(wr, "invalidate memory window");
    if (!s.ok() && ep_->CheckUsable().ok()) return s;
    // The connection is gone or failed: its QP can no longer use the window; free it now.
    if (!s.ok()) mw_.reset();
    return Status::Ok();
  }

 private:
  std::shared_ptr<VerbsCore> fab_;
  std::shared_ptr<VerbsEpCore> ep_;
  MrPtr mr_;  // declared before mw_: the window goes first
  MwPtr mw_;
  RegionDescriptor desc_;
  bool revoked_ = false;
};

class VerbsEndpoint : public Endpoint {
 public:
  VerbsEndpoint(std::shared_ptr<VerbsCore> fab, std::shared_ptr<VerbsEpCore> core)
      : fab_(std::move(fab)), core_(std::move(core)) {}
  ~VerbsEndpoint() override { core_->Close(); }
  uint64_t id() const noexcept override { return core_->id_; }
  Provider provider() const noexcept override { return Provider::kVerbs; }
  const std::string& peer() const noexcept override { return core_->peer_node_; }
  bool connected() const noexcept override {
    return core_->alive_.load(std::memory_order_acquire) && !core_->failed_.load(std::memory_order_acquire);
  }
  Status Post(std::span<const WorkRequest> wrs) override { return core_->Post(wrs); }
  Status PostRecv(std::span<const RecvRequest> rrs) override { return core_->PostRecv(rrs); }
  Result<std::unique_ptr<RemoteRegion>> Attach(const RegionDescriptor& d) override {
    if (d.provider != Provider::kVerbs) {
      return Status(
          FabricErrc::kWrongProvider,
          "descriptor of provider " + std::string(ProviderName(d.provider)) + " on a verbs endpoint");
    }
    if (d.key > UINT32_MAX) return Status(FabricErrc::kBadKey, "verbs keys are 32-bit rkeys");
    RDMQ_RETURN_IF_ERROR(core_->CheckUsable());
    return std::unique_ptr<RemoteRegion>(new VerbsRemote(d, core_->id_));
  }
  Result<std::unique_ptr<Grant>> GrantAccess(Region& region, uint64_t offset, uint64_t length,
                                             uint32_t access) override {
    auto* r = dynamic_cast<VerbsRegion*>(&region);
    if (r == nullptr || r->core() != fab_.get()) {
      return Status(Errc::kInvalidArgument,
                    "GrantAccess: the region is not registered with this verbs fabric");
    }
    RDMQ_RETURN_IF_ERROR(CheckGrant(*r, offset, length, access));
    if (!fab_->has_mw) {
      return Status(Errc::kUnsupported, "device " + fab_->device_name + " has no type-2 memory windows");
    }
    // The window is bound to an MR of exactly the granted bytes: some devices (rdma_rxe in
    // Linux 6.1) check an access through a window against the window's MR, not the window.
    RDMQ_ASSIGN_OR_RETURN(MrPtr window_mr, fab_->RegisterMr(r->data() + offset, length, access, -1, true));
    MwPtr mw(ibv_alloc_mw(fab_->pd.get(), IBV_MW_TYPE_2));
    if (!mw) return CmError("ibv_alloc_mw(type 2) on " + fab_->device_name);
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_BIND_MW;
    wr.bind_mw.mw = mw.get();
    wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info.mr = window_mr.get();
    wr.bind_mw.bind_info.addr = reinterpret_cast<uint64_t>(r->data()) + offset;
    wr.bind_mw.bind_info.length = length;
    wr.bind_mw.bind_info.mw_access_flags =
        static_cast<unsigned>(ToIbvAccess(access) & ~IBV_ACCESS_LOCAL_WRITE);
    const uint32_t rkey = wr.bind_mw.rkey;
    RDMQ_RETURN_IF_ERROR(core_->RunInternal(wr, "bind memory window"));
    return std::unique_ptr<Grant>(new VerbsGrant(fab_, core_, std::move(window_mr), std::move(mw),
                                                 r->Describe(rkey, offset, length, access)));
  }
  Status SendControl(std::span<const std::byte> m) override { return core_->SendControl(m); }
  Result<std::string> RecvControl(std::chrono::nanoseconds t) override { return core_->RecvControl(t); }
  void Close() override { core_->Close(); }

 private:
  std::shared_ptr<VerbsCore> fab_;
  std::shared_ptr<VerbsEpCore> core_;
};

// ------------------------------------------------------------------------------ fabric

class VerbsFabric : public Fabric {
 public:
  explicit VerbsFabric(std::shared_ptr<VerbsCore> core) : core_(std::move(core)) {}
  Provider provider() const noexcept override { return Provider::kVerbs; }
  std::string address() const override { return core_->address; }

  Result<std::unique_ptr<Region>> Allocate(size_t size, uint32_t access) override {
    if (size == 0) return Status(Errc::kInvalidArgument, "Allocate of 0 bytes");
    RDMQ_ASSIGN_OR_RETURN(Mapping m, MapAnonymous(RoundUp(size, PageSize())));
    std::byte* data = m.data();
    auto r = std::make_unique<VerbsRegion>(core_, std::move(m), data, size, access, -1);
    RDMQ_RETURN_IF_ERROR(r->Init());
    return std::unique_ptr<Region>(std::move(r));
  }
  Result<std::unique_ptr<Region>> Register(void* addr, size_t size, int fd, uint64_t,
                                           uint32_t access) override {
    if (addr == nullptr || size == 0) return Status(Errc::kInvalidArgument, "Register: empty range");
    auto r = std::make_unique<VerbsRegion>(core_, Mapping(), static_cast<std::byte*>(addr), size, access, fd);
    RDMQ_RETURN_IF_ERROR(r->Init());
    return std::unique_ptr<Region>(std::move(r));
  }
  Result<std::unique_ptr<CompletionQueue>> CreateCompletionQueue(size_t depth) override {
    RDMQ_ASSIGN_OR_RETURN(auto q, VerbsCq::Create(core_, depth));
    return std::unique_ptr<CompletionQueue>(std::move(q));
  }

  Result<std::unique_ptr<Endpoint>> Connect(std::string_view address, const EndpointOptions& opts) override {
    RDMQ_RETURN_IF_ERROR(CheckOptions(opts));
    RDMQ_ASSIGN_OR_RETURN(std::string_view rest, StripScheme(address, "verbs"));
    RDMQ_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(rest));
    RDMQ_ASSIGN_OR_RETURN(UniqueFd fd, ConnectTcp(hp.host, hp.port, opts.connect_timeout));
    auto ep = std::make_shared<VerbsEpCore>(*core_, opts);
    ep->peer_node_ = std::string(address);
    ep->conn_ = Conn::Create(core_->agent, std::move(fd), std::string(address));
    ep->conn_->Start(ep);
    Status s = ConnectQp(*ep, hp.host);
    if (!s.ok()) {
      ep->Close();
      return s.WithContext("verbs connect to " + std::string(address));
    }
    ep->Register();
    return std::unique_ptr<Endpoint>(new VerbsEndpoint(core_, ep));
  }

  Result<std::unique_ptr<Endpoint>> Accept(const EndpointOptions& opts,
                                           std::chrono::nanoseconds timeout) override {
    RDMQ_RETURN_IF_ERROR(CheckOptions(opts));
    if (!core_->listener)
      return Status(Errc::kFailedPrecondition, "Accept on a verbs fabric that does not listen");
    const uint64_t deadline = MonoNanos() + static_cast<uint64_t>(std::max<int64_t>(0, timeout.count()));
    for (;;) {
      const uint64_t now = MonoNanos();
      auto in = core_->accepts.Next(std::chrono::nanoseconds(deadline > now ? deadline - now : 0));
      if (!in) return Status(Errc::kTimeout, "no incoming verbs connection on " + core_->address);
      auto ep = std::make_shared<VerbsEpCore>(*core_, opts);
      ep->conn_ = in->conn;
      ep->peer_node_ = "verbs:" + in->conn->peer();
      in->conn->SetHandler(ep);
      if (in->conn->closed()) {
        ep->Close();
        continue;
      }
      Status s = AcceptQp(*ep, opts.connect_timeout);
      if (!s.ok()) {
        RDMQ_LOG(kWarn, "fabric", "verbs accept failed").kv("peer", ep->peer_node_).kv("error", s);
        ep->Close();
        if (MonoNanos() >= deadline) return s;
        continue;
      }
      ep->Register();
      return std::unique_ptr<Endpoint>(new VerbsEndpoint(core_, ep));
    }
  }

 private:
  static Status CheckOptions(const EndpointOptions& o) { return CheckEndpointCqs<VerbsCq>(o, "verbs"); }

  // Connector: hello over the bootstrap stream, then rdma_cm resolve/connect with the token.
  Status ConnectQp(VerbsEpCore& ep, const std::string& host) {
    wire::Hello h;
    h.endpoint_id = ep.id_;
    h.node = core_->address;
    RDMQ_RETURN_IF_ERROR(ep.conn_->Send(wire::kFrameHello, 0, coding::AsBytes(wire::EncodeHello(h))));
    RDMQ_ASSIGN_OR_RETURN(wire::Hello ack, ep.AwaitHelloAck());
    ep.cm_channel_.reset(rdma_create_event_channel());
    if (!ep.cm_channel_) return CmError("rdma_create_event_channel");
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(ep.cm_channel_.get(), &id, nullptr, RDMA_PS_TCP) != 0)
      return CmError("rdma_create_id");
    ep.cm_id_.reset(id);
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(ack.aux);
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) {
      return Status(Errc::kInvalidArgument, "cannot resolve '" + host + "' to an IPv4 address");
    }
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, &::freeaddrinfo);
    const int ms = static_cast<int>(ep.timeout_.count());
    if (rdma_resolve_addr(id, nullptr, res->ai_addr, ms) != 0) return CmError("rdma_resolve_addr " + host);
    RDMQ_RETURN_IF_ERROR(ExpectCmEvent(ep.cm_channel_.get(), RDMA_CM_EVENT_ADDR_RESOLVED, ep.timeout_,
                                       "resolve address " + host));
    if (rdma_resolve_route(id, ms) != 0) return CmError("rdma_resolve_route " + host);
    RDMQ_RETURN_IF_ERROR(ExpectCmEvent(ep.cm_channel_.get(), RDMA_CM_EVENT_ROUTE_RESOLVED, ep.timeout_,
                                       "resolve route to " + host));
    RDMQ_RETURN_IF_ERROR(ep.CreateQp(id));
    uint8_t token[8];
    coding::StoreLE<uint64_t>(token, ack.endpoint_id);
    rdma_conn_param param = ep.ConnParam(token, sizeof token);
    if (rdma_connect(id, &param) != 0) return CmError("rdma_connect " + host);
    return ExpectCmEvent(ep.cm_channel_.get(), RDMA_CM_EVENT_ESTABLISHED, ep.timeout_, "connect to " + host);
  }

  // Acceptor: answer the hello with the rdma_cm port and our token, then take the connect
  // request that carries the token.
  Status AcceptQp(VerbsEpCore& ep, std::chrono::milliseconds timeout) {
    wire::Hello h;
    h.endpoint_id = ep.id_;
    h.aux = core_->cm_port;
    h.node = core_->address;
    RDMQ_RETURN_IF_ERROR(ep.conn_->Send(wire::kFrameHelloAck, 0, coding::AsBytes(wire::EncodeHello(h))));
    rdma_cm_id* child = nullptr;
    const uint64_t deadline = MonoNanos() + static_cast<uint64_t>(timeout.count()) * 1'000'000;
    {
      std::lock_guard lk(core_->cm_mu);
      for (;;) {
        auto it = core_->stashed_requests.find(ep.id_);
        if (it != core_->stashed_requests.end()) {
          child = it->second;
          core_->stashed_requests.erase(it);
          break;
        }
        const uint64_t now = MonoNanos();
        if (now >= deadline)
          return Status(Errc::kTimeout, "verbs accept: no rdma_cm connect request from the peer");
        auto ev = NextCmEvent(core_->listen_channel.get(),
                              std::chrono::milliseconds((deadline - now) / 1'000'000 + 1));
        if (!ev.ok()) {
          if (ev.status().is(Errc::kTimeout)) continue;
          return ev.status();
        }
        rdma_cm_event* e = *ev;
        if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
          uint64_t token = 0;
          if (e->param.conn.private_data_len >= 8)
            token = coding::LoadLE<uint64_t>(e->param.conn.private_data);
          rdma_cm_id* id = e->id;
          rdma_ack_cm_event(e);
          if (token == ep.id_) {
            child = id;
            break;
          }
          if (token == 0) {
            rdma_reject(id, nullptr, 0);
            rdma_destroy_id(id);
          } else {
            core_->stashed_requests[token] = id;
          }
        } else {
          rdma_ack_cm_event(e);
        }
      }
    }
    // The child's events go to the endpoint's own channel from now on.
    CmIdPtr owned(child);
    ep.cm_channel_.reset(rdma_create_event_channel());
    if (!ep.cm_channel_) return CmError("rdma_create_event_channel");
    if (rdma_migrate_id(child, ep.cm_channel_.get()) != 0) return CmError("rdma_migrate_id");
    ep.cm_id_ = std::move(owned);
    RDMQ_RETURN_IF_ERROR(ep.CreateQp(child));
    rdma_conn_param param = ep.ConnParam(nullptr, 0);
    if (rdma_accept(child, &param) != 0) return CmError("rdma_accept");
    return ExpectCmEvent(ep.cm_channel_.get(), RDMA_CM_EVENT_ESTABLISHED, timeout,
                         "accept from " + ep.peer_node_);
  }

  std::shared_ptr<VerbsCore> core_;
};

}  // namespace

Result<std::unique_ptr<Fabric>> OpenVerbs(const FabricOptions& options) {
  auto core = std::make_shared<VerbsCore>();
  RDMQ_RETURN_IF_ERROR(core->Init(options));
  return std::unique_ptr<Fabric>(new VerbsFabric(std::move(core)));
}

}  // namespace rdmq::fabric::internal
