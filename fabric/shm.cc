// The shm provider: processes on one host (docs/fabric.md, "shm").
//
// Every Fabric listens on a Unix socket served by its agent thread. An Endpoint is a bootstrap
// connection on such a socket plus, per direction, a mailbox: a memfd ring that the sender fills
// with SEND and WRITE_IMM notifications and the receiver drains when its receive completion queue
// is polled, with the receiver's completion-queue doorbell (a futex word in a memfd page) rung
// after every batch. One-sided operations never involve the owner: Attach fetches the region's fd
// over the bootstrap socket (SCM_RIGHTS; a read-only reopen when the key lacks write and atomic
// rights) and maps it; WRITE and READ are copies, atomics are CPU atomics on the mapped word.
// A per-Fabric key page (a memfd of 64-bit words, mapped read-only by every peer) holds the
// current value of every key; a peer checks its key's word before each operation, which is how a
// revoked grant stops working for peers that already mapped it.
#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "conn.h"
#include "providers.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"
#include "soft_cq.h"
#include "util.h"
#include "wire.h"

namespace rdmq::fabric::internal {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kMailboxMagic = 0x31584f424c49414dULL;  // "MAILBOX1"
constexpr size_t kMailboxHeaderBytes = 4096;
constexpr uint32_t kMailboxCapacity = 1u << 20;
constexpr size_t kKeyPageSlots = 1u << 17;
constexpr size_t kKeyPageBytes = kKeyPageSlots * 8;
constexpr uint32_t kHelloHasMailbox = 1;

struct MailboxHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t capacity;
  alignas(64) std::atomic<uint64_t> tail;  // bytes ever published by the sender
  alignas(64) std::atomic<uint64_t> head;  // bytes ever consumed by the receiver
};
static_assert(sizeof(MailboxHeader) <= kMailboxHeaderBytes);

Status RequireSealedMemfd(int fd, size_t min_size, const char* what) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, std::string("fstat ") + what);
  if (static_cast<uint64_t>(st.st_size) < min_size) {
    return Status(FabricErrc::kProtocol, std::string(what) + " of " + std::to_string(st.st_size) +
                                             " bytes, want " + std::to_string(min_size));
  }
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return Status(FabricErrc::kProtocol, std::string(what) + " is not a memfd sealed against shrinking");
  }
  return Status::Ok();
}

// ------------------------------------------------------------------------------ fabric state

// The fds of one region, shared by all its keys so an fd stays open while the agent sends it.
struct RegionFds {
  UniqueFd rw;
  std::mutex mu;
  UniqueFd ro;  // read-only reopen, made on first use
  Result<int> ReadOnly() {
    std::lock_guard lk(mu);
    if (!ro.valid()) {
      const std::string path = "/proc/self/fd/" + std::to_string(rw.get());
      ro.Reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!ro.valid()) return Status::FromErrno(errno, "reopen " + path + " read-only");
    }
    return ro.get();
  }
};

struct KeyEntry {
  uint64_t key = 0;
  uint32_t slot = 0;
  std::shared_ptr<RegionFds> fds;
  uint64_t base = 0;         // owner address of the window's first byte
  uint64_t length = 0;       // window length
  uint64_t file_offset = 0;  // file offset of the window's first byte
  uint32_t access = 0;
  uint64_t scope = 0;  // 0: any peer; else the only endpoint id whose peer may attach
};

class ShmCore {
 public:
  Agent agent{"rdmq-shm"};
  AcceptQueue accepts{agent};
  std::string path;     // Unix socket path, "" if not listening
  std::string address;  // "unix:<path>" or ""
  std::shared_ptr<Listener> listener;

  UniqueFd keypage_fd;
  UniqueFd keypage_ro_fd;
  Mapping keypage;

  ~ShmCore() {
    // Nothing may run on the agent while members go away: its callbacks use them.
    agent.Stop();
    if (!path.empty()) ::unlink(path.c_str());
  }

  Status Init(const FabricOptions& o) {
    RDMQ_ASSIGN_OR_RETURN(keypage_fd, CreateMemfd("rdmq-shm-keys", kKeyPageBytes));
    RDMQ_ASSIGN_OR_RETURN(keypage, MapShared(keypage_fd.get(), kKeyPageBytes, 0, true, "shm key page"));
    keypage_ro_fd.Reset(
        ::open(("/proc/self/fd/" + std::to_string(keypage_fd.get())).c_str(), O_RDONLY | O_CLOEXEC));
    if (!keypage_ro_fd.valid()) return Status::FromErrno(errno, "reopen the shm key page read-only");
    if (!o.listen.empty()) {
      std::string_view p = o.listen;
      if (p.substr(0, 5) == "unix:") p.remove_prefix(5);
      path = std::string(p);
      RDMQ_ASSIGN_OR_RETURN(UniqueFd lfd, ListenUnix(path));
      address = "unix:" + path;
      listener = Listener::Start(agent, std::move(lfd), [this](UniqueFd fd, std::string) {
        accepts.OnAccept(std::move(fd), "unix-peer");
      });
    }
    return Status::Ok();
  }

  std::atomic<uint64_t>* Slot(uint32_t slot) {
    return reinterpret_cast<std::atomic<uint64_t>*>(keypage.data() + slot * 8);
  }

  Result<std::shared_ptr<KeyEntry>> AddKey(std::shared_ptr<RegionFds> fds, uint64_t base, uint64_t length,
                                           uint64_t file_offset, uint32_t access, uint64_t scope) {
    auto e = std::make_shared<KeyEntry>();
    e->fds = std::move(fds);
    e->base = base;
    e->length = length;
    e->file_offset = file_offset;
    e->access = access;
    e->scope = scope;
    std::lock_guard lk(mu_);
    if (!free_slots_.empty()) {
      e->slot = free_slots_.back();
      free_slots_.pop_back();
    } else if (next_slot_ < kKeyPageSlots) {
      e->slot = next_slot_++;
    } else {
      return Status(Errc::kResourceExhausted,
                    "shm fabric: all " + std::to_string(kKeyPageSlots) + " keys in use");
    }
    do {
      e->key = RandomKey();
    } while (keys_.count(e->key) != 0 || revoked_.count(e->key) != 0);
    keys_[e->key] = e;
    Slot(e->slot)->store(e->key, std::memory_order_release);
    return e;
  }

  void RevokeKey(uint64_t key) {
    std::lock_guard lk(mu_);
    auto it = keys_.find(key);
    if (it == keys_.end()) return;
    Slot(it->second->slot)->store(0, std::memory_order_release);
    free_slots_.push_back(it->second->slot);
    keys_.erase(it);
    revoked_.insert(key);
  }

  // The entry for `key`, or the error an attach with it gets.
  Result<std::shared_ptr<KeyEntry>> Lookup(uint64_t key, uint64_t endpoint_id) {
    std::lock_guard lk(mu_);
    auto it = keys_.find(key);
    if (it == keys_.end()) {
      return Status(revoked_.count(key) ? FabricErrc::kRevoked : FabricErrc::kBadKey);
    }
    if (it->second->scope != 0 && it->second->scope != endpoint_id) {
      return Status(FabricErrc::kBadKey, "the key was granted to another connection");
    }
    return it->second;
  }

 private:
  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<KeyEntry>> keys_;
  std::unordered_set<uint64_t> revoked_;
  std::vector<uint32_t> free_slots_;
  uint32_t next_slot_ = 1;  // slot 0 stays zero
};

// ------------------------------------------------------------------------------ CQ

class ShmCq : public SoftCq {
 public:
  static Result<std::unique_ptr<ShmCq>> Create(std::shared_ptr<ShmCore> core) {
    RDMQ_ASSIGN_OR_RETURN(UniqueFd fd, CreateMemfd("rdmq-shm-cq", PageSize()));
    RDMQ_ASSIGN_OR_RETURN(Mapping m,
                          MapShared(fd.get(), PageSize(), 0, true, "shm completion queue doorbell"));
    return std::unique_ptr<ShmCq>(new ShmCq(std::move(core), std::move(fd), std::move(m)));
  }
  int bell_fd() const noexcept { return fd_.get(); }

 private:
  ShmCq(std::shared_ptr<ShmCore> core, UniqueFd fd, Mapping m)
      : SoftCq(new (m.data()) Bell()), core_(std::move(core)), fd_(std::move(fd)), map_(std::move(m)) {}
  std::shared_ptr<ShmCore> core_;
  UniqueFd fd_;
  Mapping map_;
};

// ------------------------------------------------------------------------------ regions

class ShmRegion : public LocalRegion {
 public:
  ShmRegion(std::shared_ptr<ShmCore> core, std::shared_ptr<RegionFds> fds, Mapping owned, std::byte* data,
            size_t size, uint64_t file_offset, uint32_t access)
      : LocalRegion(Provider::kShm, core->address, std::move(owned), data, size, access),
        core_(std::move(core)),
        fds_(std::move(fds)),
        file_offset_(file_offset) {}
  ~ShmRegion() override {
    std::lock_guard lk(mu_);
    for (auto& [acc, key] : keys_) core_->RevokeKey(key);
  }
  Status Init() {
    RDMQ_ASSIGN_OR_RETURN(auto e, MakeKey(0, size_, access_, 0));
    main_key_ = e->key;
    std::lock_guard lk(mu_);
    keys_.emplace(access_ | 0x100u, main_key_);
    return Status::Ok();
  }

  RegionDescriptor Descriptor() const override { return Describe(main_key_, 0, size_, access_); }
  Result<RegionDescriptor> Descriptor(uint32_t access) const override {
    RDMQ_RETURN_IF_ERROR(CheckSubset(access));
    std::lock_guard lk(mu_);
    auto it = keys_.find(access | 0x100u);
    if (it != keys_.end()) return Describe(it->second, 0, size_, access);
    RDMQ_ASSIGN_OR_RETURN(auto e, MakeKey(0, size_, access, 0));
    keys_.emplace(access | 0x100u, e->key);
    return Describe(e->key, 0, size_, access);
  }

  Result<std::shared_ptr<KeyEntry>> MakeKey(uint64_t offset, uint64_t length, uint32_t access,
                                            uint64_t scope) const {
    return core_->AddKey(fds_, reinterpret_cast<uint64_t>(data_) + offset, length, file_offset_ + offset,
                         access, scope);
  }
  ShmCore* core() const noexcept { return core_.get(); }

 private:
  std::shared_ptr<ShmCore> core_;
  std::shared_ptr<RegionFds> fds_;
  uint64_t file_offset_;
  uint64_t main_key_ = 0;
  mutable std::mutex mu_;
  mutable std::map<uint32_t, uint64_t> keys_;  // access | 0x100 -> key (whole-region keys)
};

using ShmGrant = KeyGrant<ShmCore>;

class ShmRemote : public RemoteRegion {
 public:
  ShmRemote(RegionDescriptor d, Mapping m, std::byte* ptr, const wire::AttachReply& rep,
            const std::atomic<uint64_t>* slot, uint64_t endpoint_id)
      : desc_(std::move(d)),
        map_(std::move(m)),
        ptr_(ptr),
        length_(rep.length),
        access_(rep.access),
        owner_base_(rep.base),
        slot_(slot),
        endpoint_id_(endpoint_id) {}
  const RegionDescriptor& descriptor() const noexcept override { return desc_; }
  Status WaitWhileEqual(uint64_t offset, uint64_t expected, std::chrono::nanoseconds timeout) override {
    if (offset % 8 != 0)
      return Status(FabricErrc::kUnaligned, "WaitWhileEqual offset " + std::to_string(offset));
    if (offset + 8 > length_)
      return Status(FabricErrc::kOutOfBounds, "WaitWhileEqual offset " + std::to_string(offset));
    return WaitWordWhileEqual(ptr_ + offset, expected, timeout);
  }
  Status Wake(uint64_t offset) override {
    if (offset % 8 != 0 || offset + 8 > length_) return Status(FabricErrc::kOutOfBounds, "Wake");
    WakeWord(ptr_ + offset);
    return Status::Ok();
  }
  const std::byte* mapped() const noexcept override { return ptr_; }

  bool Valid() const noexcept { return slot_->load(std::memory_order_acquire) == desc_.key; }

  RegionDescriptor desc_;
  Mapping map_;
  std::byte* ptr_;
  uint64_t length_;
  uint32_t access_;
  uint64_t owner_base_;
  const std::atomic<uint64_t>* slot_;
  uint64_t endpoint_id_;
};

// ------------------------------------------------------------------------------ endpoint

class ShmEpCore : public ConnHandler, public CqSource {
 public:
  ShmEpCore(ShmCore& fab, const EndpointOptions& o)
      : fab_(fab),
        id_(NextEndpointId()),
        send_cq_(static_cast<SoftCq*>(o.send_cq)),
        recv_cq_(static_cast<SoftCq*>(o.recv_cq)),
        max_recv_(o.max_recv_wr),
        timeout_(o.connect_timeout) {}

  ~ShmEpCore() override = default;

  // Creates this side's receive mailbox (if it has a receive CQ).
  Status InitInbound() {
    if (recv_cq_ == nullptr) return Status::Ok();
    const size_t bytes = kMailboxHeaderBytes + kMailboxCapacity;
    RDMQ_ASSIGN_OR_RETURN(in_fd_, CreateMemfd("rdmq-shm-mailbox", bytes));
    RDMQ_ASSIGN_OR_RETURN(in_map_, MapShared(in_fd_.get(), bytes, 0, true, "shm mailbox"));
    in_hdr_ = new (in_map_.data()) MailboxHeader{kMailboxMagic, 1, kMailboxCapacity, {0}, {0}};
    in_data_ = in_map_.data() + kMailboxHeaderBytes;
    return Status::Ok();
  }

  wire::Hello MakeHello() const {
    wire::Hello h;
    h.flags = in_hdr_ != nullptr ? kHelloHasMailbox : 0;
    h.endpoint_id = id_;
    h.mailbox_capacity = in_hdr_ != nullptr ? kMailboxCapacity : 0;
    h.node = fab_.address;
    return h;
  }
  std::vector<int> HelloFds(int recv_bell_fd) const {
    std::vector<int> fds{fab_.keypage_ro_fd.get()};
    if (in_hdr_ != nullptr) {
      fds.push_back(in_fd_.get());
      fds.push_back(recv_bell_fd);
    }
    return fds;
  }

  // Maps what the peer's hello brought: its key page, its mailbox and its receive doorbell.
  Status AdoptPeer(const wire::Hello& h, std::vector<UniqueFd>& fds) {
    const size_t want = 1 + ((h.flags & kHelloHasMailbox) ? 2 : 0);
    if (fds.size() != want) {
      return Status(FabricErrc::kProtocol,
                    "shm hello carries " + std::to_string(fds.size()) + " fds, want " + std::to_string(want));
    }
    RDMQ_RETURN_IF_ERROR(RequireSealedMemfd(fds[0].get(), kKeyPageBytes, "peer key page"));
    RDMQ_ASSIGN_OR_RETURN(peer_keys_, MapShared(fds[0].get(), kKeyPageBytes, 0, false, "peer key page"));
    if (h.flags & kHelloHasMailbox) {
      if (h.mailbox_capacity < 4096 || h.mailbox_capacity > (64u << 20) || h.mailbox_capacity % 16 != 0) {
        return Status(FabricErrc::kProtocol, "peer mailbox capacity " + std::to_string(h.mailbox_capacity));
      }
      const size_t bytes = kMailboxHeaderBytes + h.mailbox_capacity;
      RDMQ_RETURN_IF_ERROR(RequireSealedMemfd(fds[1].get(), bytes, "peer mailbox"));
      RDMQ_RETURN_IF_ERROR(RequireSealedMemfd(fds[2].get(), sizeof(Bell), "peer doorbell"));
      RDMQ_ASSIGN_OR_RETURN(out_map_, MapShared(fds[1].get(), bytes, 0, true, "peer mailbox"));
      RDMQ_ASSIGN_OR_RETURN(out_bell_map_, MapShared(fds[2].get(), PageSize(), 0, true, "peer doorbell"));
      out_hdr_ = reinterpret_cast<MailboxHeader*>(out_map_.data());
      if (out_hdr_->magic != kMailboxMagic || out_hdr_->capacity != h.mailbox_capacity) {
        return Status(FabricErrc::kProtocol, "peer mailbox has a bad header");
      }
      out_data_ = out_map_.data() + kMailboxHeaderBytes;
      out_cap_ = h.mailbox_capacity;
      out_tail_ = out_hdr_->tail.load(std::memory_order_acquire);
      out_bell_ = reinterpret_cast<Bell*>(out_bell_map_.data());
    }
    peer_id_ = h.endpoint_id;
    peer_node_ = h.node;
    return Status::Ok();
  }

  // ---- ConnHandler (agent thread)
  void OnFrame(uint8_t type, uint16_t, std::span<const std::byte> payload,
               std::vector<UniqueFd>& fds) override {
    switch (type) {
      case wire::kFrameHelloAck: {
        std::lock_guard lk(mu_);
        auto h = wire::DecodeHello(payload);
        if (!h.ok()) {
          handshake_ = h.status();
        } else {
          hello_ = *h;
          hello_fds_ = std::move(fds);
          handshake_done_ = true;
        }
        cv_.notify_all();
        return;
      }
      case wire::kFrameControl: {
        std::lock_guard lk(mu_);
        control_.emplace_back(coding::AsChars(payload));
        cv_.notify_all();
        return;
      }
      case wire::kFrameAttachReq:
        ServeAttach(payload);
        return;
      case wire::kFrameAttachRep: {
        auto rep = wire::DecodeAttachReply(payload);
        std::lock_guard lk(mu_);
        if (!rep.ok()) {
          RDMQ_LOG(kWarn, "fabric", "bad shm attach reply").kv("peer", peer_node_).kv("error", rep.status());
          break;
        }
        if (rep->errc == 0 && fds.size() != 1) break;
        attach_replies_[rep->req_id] = {*rep, fds.empty() ? UniqueFd() : std::move(fds[0])};
        cv_.notify_all();
        return;
      }
      default:
        break;
    }
    RDMQ_LOG(kWarn, "fabric", "unexpected shm frame; closing").kv("type", type).kv("peer", peer_node_);
    if (conn_) conn_->Close();
  }

  void OnClosed(const Status& why) override { MarkGone(why); }

  void MarkGone(const Status& why) {
    {
      std::lock_guard lk(mu_);
      if (!alive_.exchange(false)) return;
      gone_reason_ = why;
      cv_.notify_all();
    }
    // Wake a sleeper on the receive queue: posted receives will flush.
    if (recv_cq_ != nullptr) recv_cq_->Ring();
  }

  void ServeAttach(std::span<const std::byte> payload) {
    auto req = wire::DecodeAttachRequest(payload);
    if (!req.ok()) {
      conn_->Close();
      return;
    }
    wire::AttachReply rep;
    rep.req_id = req->req_id;
    int fd = -1;
    std::shared_ptr<KeyEntry> keep;
    auto e = fab_.Lookup(req->key, id_);
    if (!e.ok()) {
      rep.errc = static_cast<uint32_t>(e.status().code().value());
    } else {
      keep = *e;
      if (keep->access & (kRemoteWrite | kRemoteAtomic)) {
        fd = keep->fds->rw.get();
      } else if (auto ro = keep->fds->ReadOnly(); ro.ok()) {
        fd = *ro;
      } else {
        RDMQ_LOG(kWarn, "fabric", "shm attach").kv("error", ro.status());
        rep.errc = static_cast<uint32_t>(FabricErrc::kRegistration);
      }
      if (fd >= 0) {
        rep.access = keep->access;
        rep.base = keep->base;
        rep.length = keep->length;
        rep.file_offset = keep->file_offset;
        rep.slot = keep->slot;
      }
    }
    const std::string bytes = wire::EncodeAttachReply(rep);
    iovec v{const_cast<char*>(bytes.data()), bytes.size()};
    if (fd >= 0) {
      (void)conn_->Send(wire::kFrameAttachRep, 0, std::span<const iovec>(&v, 1),
                        std::span<const int>(&fd, 1));
    } else {
      (void)conn_->Send(wire::kFrameAttachRep, 0, std::span<const iovec>(&v, 1));
    }
  }

  // ---- CqSource (the receive queue's poller)
  bool Ready() const noexcept override {
    if (posted_count_.load(std::memory_order_acquire) == 0) return false;
    if (!alive_.load(std::memory_order_acquire)) return true;
    return in_hdr_->tail.load(std::memory_order_acquire) != in_head_.load(std::memory_order_relaxed);
  }

  size_t Drain(std::span<Completion> out) override {
    size_t n = 0;
    std::lock_guard lk(recv_mu_);
    while (n < out.size() && !posted_.empty()) {
      uint64_t head = in_head_.load(std::memory_order_relaxed);
      const uint64_t tail = in_hdr_->tail.load(std::memory_order_acquire);
      if (tail == head) {
        if (alive_.load(std::memory_order_acquire)) break;
        // Peer gone and nothing left to deliver: flush posted receives.
        while (n < out.size() && !posted_.empty()) {
          out[n++] = MakeCompletion(posted_.front().tag, Opcode::kRecv, id_, FabricErrc::kPeerGone);
          posted_.pop_front();
          posted_count_.fetch_sub(1, std::memory_order_release);
        }
        break;
      }
      const uint64_t pos = head % kMailboxCapacity;
      auto e =
          (tail - head > kMailboxCapacity)
              ? Result<wire::MailboxEntry>(Status(FabricErrc::kProtocol, "mailbox: tail beyond capacity"))
              : wire::DecodeMailboxEntry(std::span<const std::byte>(in_data_ + pos, kMailboxCapacity - pos),
                                         kMaxSendSize);
      if (e.ok() && head + e->total > tail)
        e = Status(FabricErrc::kProtocol, "mailbox: entry beyond the tail");
      if (!e.ok()) {
        RDMQ_LOG(kError, "fabric", "corrupt shm mailbox; closing the endpoint")
            .kv("peer", peer_node_)
            .kv("error", e.status());
        in_hdr_->tail.store(head, std::memory_order_relaxed);
        if (conn_) conn_->Close();
        alive_.store(false, std::memory_order_release);
        continue;
      }
      if (e->kind != wire::kEntryPad) {
        const RecvRequest rr = posted_.front();
        posted_.pop_front();
        posted_count_.fetch_sub(1, std::memory_order_release);
        Completion c = MakeCompletion(rr.tag, Opcode::kRecv, id_);
        if (e->flags & wire::kEntryFlagImm) {
          c.imm = e->imm;
          c.has_imm = true;
        }
        if (e->kind == wire::kEntrySend) {
          if (e->length > rr.buffer.length) {
            c.status = make_error_code(FabricErrc::kTooLong);
          } else {
            std::memcpy(rr.buffer.addr, in_data_ + pos + wire::kEntryHeader, e->length);
            c.byte_len = e->length;
          }
        } else {
          c.byte_len = e->length;
        }
        out[n++] = c;
      }
      head += e->total;
      in_head_.store(head, std::memory_order_relaxed);
      in_hdr_->head.store(head, std::memory_order_release);
    }
    return n;
  }

  // ---- posting
  // Room for an entry of `need` bytes in the peer's mailbox (with padding to wrap)?
  FabricErrc ReserveMailbox(size_t need, uint64_t* pad) {
    if (out_hdr_ == nullptr) return FabricErrc::kRnr;
    const uint64_t head = out_hdr_->head.load(std::memory_order_acquire);
    const uint64_t pos = out_tail_ % out_cap_;
    *pad = (out_cap_ - pos < need) ? out_cap_ - pos : 0;
    if (out_tail_ + *pad + need - head > out_cap_) return FabricErrc::kRnr;
    return FabricErrc::kOk_;
  }
  void PublishMailbox(uint16_t kind, uint16_t flags, uint32_t imm, const void* data, uint32_t len,
                      uint64_t pad) {
    if (pad != 0) {
      wire::EncodeMailboxEntry(out_data_ + out_tail_ % out_cap_,
                               wire::MailboxEntry{0, wire::kEntryPad, 0, 0, static_cast<uint32_t>(pad)});
      out_tail_ += pad;
    }
    const size_t total = wire::MailboxEntryTotal(kind, kind == wire::kEntrySend ? len : 0);
    std::byte* at = out_data_ + out_tail_ % out_cap_;
    if (kind == wire::kEntrySend && len > 0) std::memcpy(at + wire::kEntryHeader, data, len);
    wire::EncodeMailboxEntry(at, wire::MailboxEntry{len, kind, flags, imm, static_cast<uint32_t>(total)});
    out_tail_ += total;
    out_hdr_->tail.store(out_tail_, std::memory_order_release);
  }

  FabricErrc Execute(const WorkRequest& wr, bool* rang) {
    const auto* r = static_cast<const ShmRemote*>(wr.remote);
    const uint32_t len = static_cast<uint32_t>(wr.local.length);
    switch (wr.opcode) {
      case Opcode::kSend: {
        uint64_t pad;
        const size_t need = wire::MailboxEntryTotal(wire::kEntrySend, len);
        if (FabricErrc e = ReserveMailbox(need, &pad); e != FabricErrc::kOk_) return e;
        PublishMailbox(wire::kEntrySend, 0, 0, wr.local.addr, len, pad);
        *rang = true;
        return FabricErrc::kOk_;
      }
      case Opcode::kWrite:
      case Opcode::kWriteImm:
      case Opcode::kRead:
      case Opcode::kFetchAdd:
      case Opcode::kCompareSwap: {
        if (!r->Valid()) return FabricErrc::kRevoked;
        const uint64_t n = (wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap) ? 8 : len;
        const FabricErrc check = CheckAccess(wr.opcode, r->access_, r->length_, wr.remote_offset, n,
                                             r->owner_base_ + wr.remote_offset);
        if (check != FabricErrc::kOk_) return check;
        std::byte* target = r->ptr_ + wr.remote_offset;
        switch (wr.opcode) {
          case Opcode::kWrite:
            if (len) std::memcpy(target, wr.local.addr, len);
            std::atomic_thread_fence(std::memory_order_release);
            return FabricErrc::kOk_;
          case Opcode::kWriteImm: {
            uint64_t pad;
            const size_t need = wire::MailboxEntryTotal(wire::kEntryWriteImm, 0);
            if (FabricErrc e = ReserveMailbox(need, &pad); e != FabricErrc::kOk_) return e;
            if (len) std::memcpy(target, wr.local.addr, len);
            PublishMailbox(wire::kEntryWriteImm, wire::kEntryFlagImm, wr.imm, nullptr, len, pad);
            *rang = true;
            return FabricErrc::kOk_;
          }
          case Opcode::kRead:
            std::atomic_thread_fence(std::memory_order_acquire);
            if (len) std::memcpy(wr.local.addr, target, len);
            return FabricErrc::kOk_;
          case Opcode::kFetchAdd: {
            const uint64_t old = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(target))
                                     .fetch_add(wr.operand, std::memory_order_acq_rel);
            if (wr.local.addr) std::memcpy(wr.local.addr, &old, 8);
            return FabricErrc::kOk_;
          }
          default: {
            uint64_t expected = wr.operand;
            std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(target))
                .compare_exchange_strong(expected, wr.swap, std::memory_order_acq_rel);
            if (wr.local.addr) std::memcpy(wr.local.addr, &expected, 8);
            return FabricErrc::kOk_;
          }
        }
      }
      default:
        return FabricErrc::kProtocol;
    }
  }

  Status Post(std::span<const WorkRequest> wrs) {
    if (!alive_.load(std::memory_order_acquire)) return Status(FabricErrc::kPeerGone, GoneContext());
    for (const WorkRequest& wr : wrs) {
      RDMQ_RETURN_IF_ERROR(ValidateWorkRequest(wr));
      if (wr.opcode != Opcode::kSend) {
        if (wr.remote->descriptor().provider != Provider::kShm ||
            static_cast<const ShmRemote*>(wr.remote)->endpoint_id_ != id_) {
          return Status(Errc::kInvalidArgument, "remote region was not attached on this endpoint");
        }
      }
    }
    Completion local[32];
    size_t nlocal = 0;
    bool rang = false;
    for (const WorkRequest& wr : wrs) {
      const FabricErrc e = Execute(wr, &rang);
      if (e != FabricErrc::kOk_ || wr.signaled) {
        uint32_t byte_len = 0;
        if (e == FabricErrc::kOk_) {
          byte_len = wr.opcode == Opcode::kRead ? static_cast<uint32_t>(wr.local.length)
                     : (wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap) ? 8
                                                                                             : 0;
        }
        local[nlocal++] = MakeCompletion(wr.tag, wr.opcode, id_, e, byte_len);
        if (nlocal == std::size(local)) {
          send_cq_->PushMany(std::span<const Completion>(local, nlocal));
          nlocal = 0;
        }
      }
    }
    if (rang) RingBell(out_bell_);
    if (nlocal) send_cq_->PushMany(std::span<const Completion>(local, nlocal));
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
    {
      std::lock_guard lk(recv_mu_);
      if (closed_locally_) return Status(FabricErrc::kPeerGone, "endpoint closed");
      if (posted_.size() + rrs.size() > max_recv_) {
        return Status(FabricErrc::kQueueFull, std::to_string(posted_.size()) +
                                                  " receives already posted (max " +
                                                  std::to_string(max_recv_) + ")");
      }
      posted_.insert(posted_.end(), rrs.begin(), rrs.end());
      posted_count_.fetch_add(rrs.size(), std::memory_order_release);
    }
    recv_cq_->Ring();
    return Status::Ok();
  }

  Result<std::unique_ptr<RemoteRegion>> Attach(const RegionDescriptor& desc) {
    if (desc.provider != Provider::kShm) {
      return Status(
          FabricErrc::kWrongProvider,
          "descriptor of provider " + std::string(ProviderName(desc.provider)) + " on a shm endpoint");
    }
    uint64_t req_id;
    {
      std::lock_guard lk(mu_);
      if (!alive_) return Status(FabricErrc::kPeerGone, GoneContext());
      req_id = next_req_++;
    }
    const std::string req = wire::EncodeAttachRequest({req_id, desc.key});
    RDMQ_RETURN_IF_ERROR(conn_->Send(wire::kFrameAttachReq, 0, coding::AsBytes(req)));
    std::unique_lock lk(mu_);
    const bool got = cv_.wait_for(lk, timeout_, [&] { return attach_replies_.count(req_id) || !alive_; });
    auto it = attach_replies_.find(req_id);
    if (it == attach_replies_.end()) {
      if (!got) return Status(Errc::kTimeout, "shm attach: no answer from " + peer_node_);
      return Status(FabricErrc::kPeerGone, GoneContext());
    }
    wire::AttachReply rep = it->second.first;
    UniqueFd fd = std::move(it->second.second);
    attach_replies_.erase(it);
    lk.unlock();
    char keyhex[32];
    std::snprintf(keyhex, sizeof keyhex, "%016llx", static_cast<unsigned long long>(desc.key));
    if (rep.errc != 0) {
      return Status(static_cast<FabricErrc>(rep.errc),
                    std::string("shm attach of key ") + keyhex + " at " + peer_node_);
    }
    if (rep.slot >= kKeyPageSlots) return Status(FabricErrc::kProtocol, "shm attach: key slot out of range");
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "fstat attached region fd");
    if (rep.file_offset + rep.length > static_cast<uint64_t>(st.st_size)) {
      return Status(FabricErrc::kProtocol, "shm attach: window beyond the end of the region file");
    }
    const uint64_t map_off = RoundDown(rep.file_offset, PageSize());
    const uint64_t delta = rep.file_offset - map_off;
    const uint64_t map_len = RoundUp(delta + rep.length, PageSize());
    const bool writable = (rep.access & (kRemoteWrite | kRemoteAtomic)) != 0;
    // Populated at once: a first touch on the data path would cost a page fault per page.
    RDMQ_ASSIGN_OR_RETURN(Mapping m, MapShared(fd.get(), map_len, map_off, writable,
                                               std::string("attached region (key ") + keyhex + ")", true));
    std::byte* ptr = m.data() + delta;
    const auto* slot = reinterpret_cast<const std::atomic<uint64_t>*>(peer_keys_.data() + rep.slot * 8);
    return std::unique_ptr<RemoteRegion>(new ShmRemote(desc, std::move(m), ptr, rep, slot, id_));
  }

  Status SendControl(std::span<const std::byte> message) {
    if (message.size() > (1u << 20))
      return Status(Errc::kInvalidArgument, "control message longer than 1 MiB");
    if (!alive_.load()) return Status(FabricErrc::kPeerGone, GoneContext());
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
    if (!alive_) return Status(FabricErrc::kPeerGone, GoneContext());
    return Status(Errc::kTimeout, "no control message from " + peer_node_);
  }

  // Waits for the acceptor's hello (connecting side).
  Status AwaitHelloAck() {
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, timeout_, [&] { return handshake_done_ || !handshake_.ok() || !alive_; });
    if (!handshake_.ok()) return handshake_;
    if (!handshake_done_) {
      if (!alive_) return Status(FabricErrc::kPeerGone, "shm connect: the acceptor closed the connection");
      return Status(Errc::kTimeout, "shm connect: no answer (is anyone calling Accept?)");
    }
    wire::Hello h = hello_;
    std::vector<UniqueFd> fds = std::move(hello_fds_);
    lk.unlock();
    return AdoptPeer(h, fds);
  }

  void Close() {
    {
      std::lock_guard lk(recv_mu_);
      if (closed_locally_) return;
      closed_locally_ = true;
    }
    MarkGone(Status(FabricErrc::kPeerGone, "endpoint closed locally"));
    if (conn_) {
      conn_->ClearHandler();
      conn_->Close();
    }
    if (recv_cq_ != nullptr && registered_) recv_cq_->RemoveSource(this);
    std::vector<Completion> flush;
    {
      std::lock_guard lk(recv_mu_);
      for (const RecvRequest& rr : posted_)
        flush.push_back(MakeCompletion(rr.tag, Opcode::kRecv, id_, FabricErrc::kPeerGone));
      posted_.clear();
      posted_count_.store(0);
    }
    if (!flush.empty() && recv_cq_ != nullptr) recv_cq_->PushMany(flush);
  }

  void Register() {
    if (recv_cq_ != nullptr) {
      recv_cq_->AddSource(this);
      registered_ = true;
    }
  }

  std::string GoneContext() const { return "shm endpoint to " + peer_node_; }

  ShmCore& fab_;
  const uint64_t id_;
  SoftCq* send_cq_;
  SoftCq* recv_cq_;
  const uint32_t max_recv_;
  const std::chrono::milliseconds timeout_;
  std::shared_ptr<Conn> conn_;
  std::string peer_node_;
  uint64_t peer_id_ = 0;
  bool registered_ = false;

  std::atomic<bool> alive_{true};

  // inbound mailbox (we consume)
  UniqueFd in_fd_;
  Mapping in_map_;
  MailboxHeader* in_hdr_ = nullptr;
  std::byte* in_data_ = nullptr;
  std::atomic<uint64_t> in_head_{0};
  // outbound mailbox (the peer's; we produce) and its doorbell
  Mapping out_map_, out_bell_map_;
  MailboxHeader* out_hdr_ = nullptr;
  std::byte* out_data_ = nullptr;
  uint32_t out_cap_ = 0;
  uint64_t out_tail_ = 0;
  Bell* out_bell_ = nullptr;
  Mapping peer_keys_;

  std::mutex recv_mu_;
  std::deque<RecvRequest> posted_;
  std::atomic<size_t> posted_count_{0};
  bool closed_locally_ = false;

  std::mutex mu_;
  std::condition_variable cv_;
  Status gone_reason_;
  std::deque<std::string> control_;
  uint64_t next_req_ = 1;
  std::map<uint64_t, std::pair<wire::AttachReply, UniqueFd>> attach_replies_;
  bool handshake_done_ = false;
  Status handshake_;
  wire::Hello hello_;
  std::vector<UniqueFd> hello_fds_;
};

class ShmEndpoint : public Endpoint {
 public:
  ShmEndpoint(std::shared_ptr<ShmCore> fab, std::shared_ptr<ShmEpCore> core, std::string peer)
      : fab_(std::move(fab)), core_(std::move(core)), peer_(std::move(peer)) {}
  ~ShmEndpoint() override { core_->Close(); }
  uint64_t id() const noexcept override { return core_->id_; }
  Provider provider() const noexcept override { return Provider::kShm; }
  const std::string& peer() const noexcept override { return peer_; }
  bool connected() const noexcept override { return core_->alive_.load(std::memory_order_acquire); }
  Status Post(std::span<const WorkRequest> wrs) override { return core_->Post(wrs); }
  Status PostRecv(std::span<const RecvRequest> rrs) override { return core_->PostRecv(rrs); }
  Result<std::unique_ptr<RemoteRegion>> Attach(const RegionDescriptor& desc) override {
    return core_->Attach(desc);
  }
  Result<std::unique_ptr<Grant>> GrantAccess(Region& region, uint64_t offset, uint64_t length,
                                             uint32_t access) override {
    auto* r = dynamic_cast<ShmRegion*>(&region);
    if (r == nullptr || r->core() != fab_.get()) {
      return Status(Errc::kInvalidArgument, "GrantAccess: the region is not registered with this shm fabric");
    }
    RDMQ_RETURN_IF_ERROR(CheckGrant(*r, offset, length, access));
    RDMQ_ASSIGN_OR_RETURN(auto e, r->MakeKey(offset, length, access, core_->id_));
    return std::unique_ptr<Grant>(new ShmGrant(fab_, r->Describe(e->key, offset, length, access)));
  }
  Status SendControl(std::span<const std::byte> message) override { return core_->SendControl(message); }
  Result<std::string> RecvControl(std::chrono::nanoseconds timeout) override {
    return core_->RecvControl(timeout);
  }
  void Close() override { core_->Close(); }

 private:
  std::shared_ptr<ShmCore> fab_;
  std::shared_ptr<ShmEpCore> core_;
  std::string peer_;
};

// ------------------------------------------------------------------------------ fabric

class ShmFabric : public Fabric {
 public:
  explicit ShmFabric(std::shared_ptr<ShmCore> core) : core_(std::move(core)) {}
  Provider provider() const noexcept override { return Provider::kShm; }
  std::string address() const override { return core_->address; }

  Result<std::unique_ptr<Region>> Allocate(size_t size, uint32_t access) override {
    if (size == 0) return Status(Errc::kInvalidArgument, "Allocate of 0 bytes");
    const size_t bytes = RoundUp(size, PageSize());
    auto fds = std::make_shared<RegionFds>();
    RDMQ_ASSIGN_OR_RETURN(fds->rw, CreateMemfd("rdmq-shm-region", bytes));
    RDMQ_ASSIGN_OR_RETURN(Mapping m, MapShared(fds->rw.get(), bytes, 0, true, "shm region"));
    std::byte* data = m.data();
    auto r = std::make_unique<ShmRegion>(core_, std::move(fds), std::move(m), data, size, 0, access);
    RDMQ_RETURN_IF_ERROR(r->Init());
    return std::unique_ptr<Region>(std::move(r));
  }

  Result<std::unique_ptr<Region>> Register(void* addr, size_t size, int fd, uint64_t file_offset,
                                           uint32_t access) override {
    if (addr == nullptr || size == 0) return Status(Errc::kInvalidArgument, "Register: empty range");
    if (fd < 0) {
      return Status(FabricErrc::kRegistration,
                    "shm regions must be file- or memfd-backed: Register needs the fd that `addr` maps");
    }
    if (file_offset % PageSize() != reinterpret_cast<uintptr_t>(addr) % PageSize()) {
      return Status(Errc::kInvalidArgument, "Register: address and file offset differ within the page");
    }
    auto fds = std::make_shared<RegionFds>();
    fds->rw.Reset(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!fds->rw.valid()) return Status::FromErrno(errno, "dup the region fd");
    struct stat st;
    if (::fstat(fds->rw.get(), &st) != 0) return Status::FromErrno(errno, "fstat the region fd");
    if (file_offset + size > static_cast<uint64_t>(st.st_size)) {
      return Status(FabricErrc::kOutOfBounds,
                    "Register: range ends beyond the file (" + std::to_string(st.st_size) + " bytes)");
    }
    auto r = std::make_unique<ShmRegion>(core_, std::move(fds), Mapping(), static_cast<std::byte*>(addr),
                                         size, file_offset, access);
    RDMQ_RETURN_IF_ERROR(r->Init());
    return std::unique_ptr<Region>(std::move(r));
  }

  Result<std::unique_ptr<CompletionQueue>> CreateCompletionQueue(size_t) override {
    RDMQ_ASSIGN_OR_RETURN(auto cq, ShmCq::Create(core_));
    return std::unique_ptr<CompletionQueue>(std::move(cq));
  }

  Result<std::unique_ptr<Endpoint>> Connect(std::string_view address, const EndpointOptions& opts) override {
    RDMQ_RETURN_IF_ERROR(CheckOptions(opts));
    RDMQ_ASSIGN_OR_RETURN(std::string_view path, StripScheme(address, "unix"));
    RDMQ_ASSIGN_OR_RETURN(UniqueFd fd, ConnectUnix(std::string(path), opts.connect_timeout));
    auto ep = std::make_shared<ShmEpCore>(*core_, opts);
    ep->peer_node_ = std::string(address);
    RDMQ_RETURN_IF_ERROR(ep->InitInbound());
    ep->conn_ = Conn::Create(core_->agent, std::move(fd), std::string(address));
    ep->conn_->Start(ep);
    const int bell = opts.recv_cq ? static_cast<ShmCq*>(opts.recv_cq)->bell_fd() : -1;
    const std::string hello = wire::EncodeHello(ep->MakeHello());
    const std::vector<int> fds = ep->HelloFds(bell);
    iovec v{const_cast<char*>(hello.data()), hello.size()};
    Status s = ep->conn_->Send(wire::kFrameHello, 0, std::span<const iovec>(&v, 1), fds);
    if (s.ok()) s = ep->AwaitHelloAck();
    if (!s.ok()) {
      ep->Close();
      return s.WithContext("shm connect to " + std::string(address));
    }
    ep->Register();
    return std::unique_ptr<Endpoint>(new ShmEndpoint(core_, ep, std::string(address)));
  }

  Result<std::unique_ptr<Endpoint>> Accept(const EndpointOptions& opts,
                                           std::chrono::nanoseconds timeout) override {
    RDMQ_RETURN_IF_ERROR(CheckOptions(opts));
    if (!core_->listener)
      return Status(Errc::kFailedPrecondition, "Accept on a shm fabric that does not listen");
    for (;;) {
      auto in = core_->accepts.Next(timeout);
      if (!in) return Status(Errc::kTimeout, "no incoming shm connection on " + core_->address);
      auto ep = std::make_shared<ShmEpCore>(*core_, opts);
      ep->conn_ = in->conn;
      Status s = ep->InitInbound();
      if (s.ok()) s = ep->AdoptPeer(in->hello, in->fds);
      if (!s.ok()) {
        RDMQ_LOG(kWarn, "fabric", "rejecting shm connection").kv("error", s);
        in->conn->Close();
        ep->Close();
        continue;
      }
      if (ep->peer_node_.empty()) ep->peer_node_ = "unix-peer#" + std::to_string(ep->peer_id_);
      in->conn->SetHandler(ep);
      if (in->conn->closed()) ep->MarkGone(Status(FabricErrc::kPeerGone, "peer left before accept"));
      const int bell = opts.recv_cq ? static_cast<ShmCq*>(opts.recv_cq)->bell_fd() : -1;
      const std::string hello = wire::EncodeHello(ep->MakeHello());
      const std::vector<int> fds = ep->HelloFds(bell);
      iovec v{const_cast<char*>(hello.data()), hello.size()};
      s = in->conn->Send(wire::kFrameHelloAck, 0, std::span<const iovec>(&v, 1), fds);
      if (!s.ok()) {
        ep->Close();
        continue;
      }
      ep->Register();
      std::string peer = ep->peer_node_;
      return std::unique_ptr<Endpoint>(new ShmEndpoint(core_, ep, std::move(peer)));
    }
  }

 private:
  static Status CheckOptions(const EndpointOptions& o) { return CheckEndpointCqs<ShmCq>(o, "shm"); }

  std::shared_ptr<ShmCore> core_;
};

}  // namespace

Result<std::unique_ptr<Fabric>> OpenShm(const FabricOptions& options) {
  auto core = std::make_shared<ShmCore>();
  RDMQ_RETURN_IF_ERROR(core->Init(options));
  return std::unique_ptr<Fabric>(new ShmFabric(std::move(core)));
}

}  // namespace rdmq::fabric::internal
