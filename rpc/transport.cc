#include "rpc/transport.h"

#include <random>
#include <string>

#include "rdmq/rpc/errors.h"

namespace rdmq::rpc::internal {

uint64_t RandomSeed() noexcept {
  std::random_device rd;
  uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  s ^= static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  return s != 0 ? s : 0x9E3779B97F4A7C15ull;
}

Status SendQueue::Handle(const fabric::Completion& c) {
  if (c.status) {
    return Status(c.status, std::string("endpoint to ") + ep_->peer() + ": " +
                                std::string(fabric::OpcodeName(c.opcode)) + " failed");
  }
  if (c.tag == kTagSignal) {
    if (!marks_.empty()) {
      completed_ = marks_.front();
      marks_.pop_front();
    }
  } else if (c.tag == kTagRead) {
    read_done_ = true;
  }
  return Status();
}

Status SendQueue::Reap() {
  fabric::Completion cs[16];
  for (;;) {
    const size_t n = cq_->Poll(cs);
    for (size_t i = 0; i < n; ++i) RDMQ_RETURN_IF_ERROR(Handle(cs[i]));
    if (n < std::size(cs)) return Status();
  }
}

Status SendQueue::Post(std::span<fabric::WorkRequest> wrs) {
  const uint64_t k = wrs.size();
  // Keep a few slots for the READ/atomic helpers.
  for (int spins = 0; posted_ - completed_ + k + 4 > max_wr_; ++spins) {
    if (!ep_->connected()) return Status(fabric::FabricErrc::kPeerGone, "endpoint to " + ep_->peer());
    RDMQ_RETURN_IF_ERROR(Reap());
    if (spins > 1000) std::this_thread::yield();
  }
  since_signal_ += static_cast<uint32_t>(k);
  bool signalled = false;
  for (auto& wr : wrs) signalled |= wr.signaled;
  if (!signalled && since_signal_ >= signal_every_) {
    wrs.back().signaled = true;
    wrs.back().tag = kTagSignal;
    marks_.push_back(posted_ + k);
    since_signal_ = 0;
  }
  RDMQ_RETURN_IF_ERROR(ep_->Post(wrs));
  posted_ += k;
  if (marks_.size() > 1) return Reap();
  return Status();
}

Status SendQueue::ReadSync(fabric::WorkRequest read, Clock::time_point deadline) {
  read.signaled = true;
  read.tag = kTagRead;
  read_done_ = false;
  // A signalled READ also retires everything before it.
  marks_.push_back(posted_ + 1);
  auto wrs = std::span<fabric::WorkRequest>(&read, 1);
  Status st = ep_->Post(wrs);
  if (!st.ok()) {
    marks_.pop_back();
    return st;
  }
  ++posted_;
  since_signal_ = 0;
  fabric::Completion cs[16];
  for (int spins = 0; !read_done_; ++spins) {
    const size_t n = cq_->Poll(cs);
    for (size_t i = 0; i < n; ++i) {
      if (cs[i].tag == kTagRead && !cs[i].status) {
        // The READ's mark is the last one; every earlier mark is retired with it.
        completed_ = marks_.empty() ? completed_ : marks_.back();
        marks_.clear();
        read_done_ = true;
      } else {
        RDMQ_RETURN_IF_ERROR(Handle(cs[i]));
      }
    }
    if (read_done_) break;
    if (Clock::now() >= deadline)
      return Status(Errc::kTimeout, "READ of the peer's ring head at " + ep_->peer());
    if (!ep_->connected()) return Status(fabric::FabricErrc::kPeerGone, "endpoint to " + ep_->peer());
    if (spins > 100) std::this_thread::yield();
  }
  return Status();
}

size_t MessageWrites(const RingProducer::Placement& p, uint64_t capacity, uint32_t body, uint32_t length,
                     const fabric::Region& staging, const fabric::RemoteRegion& ring, uint64_t ring_offset,
                     bool doorbell_imm, fabric::WorkRequest* out) {
  size_t n = 0;
  auto write = [&](uint64_t off, uint64_t len, bool imm) {
    fabric::WorkRequest& wr = out[n++];
    wr = fabric::WorkRequest{};
    wr.opcode = imm ? fabric::Opcode::kWriteImm : fabric::Opcode::kWrite;
    wr.tag = kTagOther;
    wr.signaled = false;
    wr.local = {staging.data() + off, len, &staging};
    wr.remote = &ring;
    wr.remote_offset = ring_offset + off;
    wr.imm = imm ? EncodeImm({ImmKind::kDoorbell, 0, 0}) : 0;
  };
  if (p.pad_length > 0) {
    const uint64_t off = p.pad_position % capacity;
    write(off, kHeaderSize, false);
    write(off + p.pad_length - kCanarySize, kCanarySize, false);
  }
  write(p.offset, body, false);
  write(p.offset + length - kCanarySize, kCanarySize, doorbell_imm);
  return n;
}

Status RingDoorbellIfParked(SendQueue& sq, fabric::RemoteRegion& wake, const fabric::Region& scratch_region,
                            std::byte* scratch, bool* woke) {
  const std::byte* m = wake.mapped();
  if (m == nullptr) return Status();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (LoadAcquire64(m + kParkedOffset) == 0) return Status();
  fabric::WorkRequest fa;
  fa.opcode = fabric::Opcode::kFetchAdd;
  fa.tag = kTagOther;
  fa.signaled = false;
  fa.local = {scratch, 8, &scratch_region};
  fa.remote = &wake;
  fa.remote_offset = kDoorbellOffset;
  fa.operand = 1;
  RDMQ_RETURN_IF_ERROR(sq.Post(std::span<fabric::WorkRequest>(&fa, 1)));
  *woke = true;
  return wake.Wake(kDoorbellOffset);
}

uint16_t WireErrc(const Status& s) noexcept {
  for (int e = static_cast<int>(Errc::kInvalidArgument); e <= static_cast<int>(Errc::kInternal); ++e) {
    if (s.is(static_cast<Errc>(e))) return static_cast<uint16_t>(e);
  }
  return static_cast<uint16_t>(Errc::kInternal);
}

}  // namespace rdmq::rpc::internal
