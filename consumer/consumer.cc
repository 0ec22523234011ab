// Consumer (consumer.h): reads the partition slot and the log with one-sided READs
// (docs/protocol.md §6). On shm the segments are mapped read-only in this process and records
// are parsed in place (zero copy) below the committed position the slot publishes; elsewhere
// each READ lands in a registered buffer per partition; the records of compressed batches are
// decompressed into buffers kept until the next Poll. Idle consumers sleep on the slot's
// futex (shm, one partition) or wait for the node's Watch notification on the data endpoint.
#include "rdmq/consumer/consumer.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "consumer/cluster_consumer.h"
#include "consumer/decompressed.h"
#include "consumer/group_consumer.h"
#include "consumer/reconnect.h"
#include "rdmq/client/connection.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"
#include "rdmq/protocol/data_plane.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/storage/format.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::consumer {
namespace {

using protocol::Api;
using protocol::WireError;
using Clock = std::chrono::steady_clock;
namespace format = storage::format;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

constexpr uint32_t kNotifyRecvs = 64;
constexpr uint64_t kTagRead = 1;

struct Seg {
  protocol::SegmentLocation loc;
  std::unique_ptr<fabric::RemoteRegion> remote;
  const std::byte* mapped = nullptr;  // shm: the read-only mapping of the whole file
  bool seal_known = false;
  uint64_t seal_end = 0;
  int64_t seal_next = 0;
};

struct Part {
  TopicPartition tp;
  TopicId topic_id{0};
  bool opened = false;
  std::unique_ptr<fabric::RemoteRegion> slot;
  const std::byte* slot_mapped = nullptr;
  std::map<int64_t, Seg> segs;
  std::unique_ptr<fabric::Region> buf;  // READ target (tcp/verbs); [0,64) slot, then data
  size_t buf_cap = 0;
  int64_t position = 0;  // next offset Poll returns
  enum class Need { kNone, kEarliest, kLatest, kSeek } need = Need::kEarliest;
  bool cursor = false;  // cur_seg/cur_pos hold the batch containing `position`
  int64_t cur_seg = 0;
  uint64_t cur_pos = 0;
  uint64_t gen = 0;  // last slot generation seen
  bool watching = false;
  bool fetched_this_poll = false;
};

class ConsumerImpl final : public Consumer {
 public:
  explicit ConsumerImpl(ConsumerConfig cfg) : cfg_(std::move(cfg)), reconnect_(cfg_.client) {}
  ~ConsumerImpl() override { Close(); }

  Status Init() {
    RDMQ_ASSIGN_OR_RETURN(conn_, client::Connection::Open(cfg_.client));
    shm_ = conn_->provider() == fabric::Provider::kShm;
    RDMQ_ASSIGN_OR_RETURN(notify_, conn_->fabric().Allocate(size_t{kNotifyRecvs} * 64, fabric::kLocalWrite));
    return PostNotifyRecvs();
  }
  // The bootstrap broker's answer: whether it is part of a cluster (cluster_consumer.h).
  Result<protocol::DescribeClusterResponse> DescribeCluster() const {
    return conn_->Call<protocol::DescribeClusterResponse>(protocol::Api::kDescribeCluster, protocol::Empty{});
  }
  Status PostNotifyRecvs() {
    std::vector<fabric::RecvRequest> rr(kNotifyRecvs);
    for (uint32_t i = 0; i < kNotifyRecvs; ++i)
      rr[i] = {i, {notify_->data() + size_t{i} * 64, 64, notify_.get()}};
    return conn_->data()->PostRecv(rr);
  }

  Status Assign(const std::vector<TopicPartition>& partitions) override {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    // New partitions are opened first, so that a refusal leaves the assignment as it was. One
    // that cannot be opened because the broker is away is kept unopened; Fetch opens it once the
    // broker is back.
    std::map<TopicPartition, std::unique_ptr<Part>> fresh;
    for (const auto& tp : partitions) {
      const bool have = std::any_of(parts_.begin(), parts_.end(), [&](const auto& p) { return p->tp == tp; });
      if (have || fresh.count(tp) != 0) continue;
      auto p = std::make_unique<Part>();
      p->tp = tp;
      p->need = cfg_.auto_offset_reset == OffsetReset::kLatest ? Part::Need::kLatest : Part::Need::kEarliest;
      if (Status s = Open(*p); !s.ok() && !s.is(Errc::kUnavailable) && !s.is(Errc::kTimeout)) return s;
      fresh.emplace(tp, std::move(p));
    }
    std::vector<std::unique_ptr<Part>> next;
    for (const auto& tp : partitions) {
      auto it = std::find_if(parts_.begin(), parts_.end(), [&](const auto& p) { return p && p->tp == tp; });
      if (it != parts_.end()) {
        next.push_back(std::move(*it));
      } else if (auto f = fresh.find(tp); f != fresh.end() && f->second) {
        next.push_back(std::move(f->second));
      }
    }
    parts_ = std::move(next);
    return Status::Ok();
  }

  std::vector<TopicPartition> Assignment() const override {
    std::vector<TopicPartition> out;
    for (const auto& p : parts_) out.push_back(p->tp);
    return out;
  }

  Result<std::vector<ConsumerRecord>> Poll(std::chrono::milliseconds timeout) override {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    std::vector<ConsumerRecord> out;
    decompressed_.Reset();  // the views the previous Poll returned end here
    const auto deadline = Clock::now() + timeout;
    bool first = true;
    while (true) {
      if (!first && wakeup_.exchange(false)) return out;
      // The broker went away: nothing to read until it is back (reconnect.h).
      if (!Reachable(deadline)) {
        if (Clock::now() >= deadline) break;
        first = false;
        continue;
      }
      // Each partition is read at most once per Poll: its buffer holds the views returned.
      for (size_t i = 0; i < parts_.size() && out.size() < cfg_.max_poll_records; ++i) {
        Part& p = *parts_[(rr_ + i) % parts_.size()];
        if (p.fetched_this_poll) continue;
        const size_t before = out.size();
        if (Status fs = Fetch(p, &out); !fs.ok()) {
          if (!fs.is(Errc::kUnavailable) || conn_->connected()) return fs;
          break;  // the broker went away meanwhile: the next round reconnects
        }
        if (out.size() != before) p.fetched_this_poll = true;
      }
      if (!parts_.empty()) rr_ = (rr_ + 1) % parts_.size();
      if (!out.empty()) break;
      if (wakeup_.exchange(false)) break;
      if (Clock::now() >= deadline) break;
      first = false;
      if (!conn_->connected()) continue;
      RDMQ_RETURN_IF_ERROR(Sleep(deadline));
    }
    for (auto& p : parts_) p->fetched_this_poll = false;
    return out;
  }

  Status Seek(const TopicPartition& tp, int64_t offset) override {
    RDMQ_ASSIGN_OR_RETURN(Part * p, Find(tp));
    if (offset < 0)
      return Status(Errc::kInvalidArgument, "Seek to a negative offset " + std::to_string(offset));
    p->position = offset;
    p->need = Part::Need::kSeek;
    p->cursor = false;
    return Status::Ok();
  }
  Status SeekToBeginning(const std::vector<TopicPartition>& partitions) override {
    for (const auto& tp : SelectOrAll(partitions)) {
      RDMQ_ASSIGN_OR_RETURN(Part * p, Find(tp));
      p->need = Part::Need::kEarliest;
      p->cursor = false;
    }
    return Status::Ok();
  }
  Status SeekToEnd(const std::vector<TopicPartition>& partitions) override {
    for (const auto& tp : SelectOrAll(partitions)) {
      RDMQ_ASSIGN_OR_RETURN(Part * p, Find(tp));
      p->need = Part::Need::kLatest;
      p->cursor = false;
    }
    return Status::Ok();
  }
  Result<int64_t> Position(const TopicPartition& tp) override {
    RDMQ_ASSIGN_OR_RETURN(Part * p, Find(tp));
    if (p->need != Part::Need::kNone && p->need != Part::Need::kSeek) RDMQ_RETURN_IF_ERROR(Locate(*p));
    return p->position;
  }
  Result<int64_t> OffsetForTime(const TopicPartition& tp, int64_t timestamp_ms) override {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    if (timestamp_ms < 0) return Status(Errc::kInvalidArgument, "OffsetForTime with a negative timestamp");
    protocol::ListOffsetsRequest req{tp.topic, PartitionId(tp.partition), timestamp_ms, Offset(0)};
    RDMQ_ASSIGN_OR_RETURN(auto r, (conn_->Call<protocol::ListOffsetsResponse>(Api::kListOffsets, req)));
    return r.offset.value();
  }
  void Wakeup() override {
    wakeup_.store(true, std::memory_order_release);
    std::lock_guard lock(wake_mu_);
    if (sleeping_on_ != nullptr) (void)sleeping_on_->Wake(0);
  }
  void Close() override {
    if (closed_) return;
    closed_ = true;
    parts_.clear();
    notify_.reset();
    conn_.reset();
  }

 private:
  Status CheckOpen() const {
    if (closed_) return Status(Errc::kFailedPrecondition, "the consumer is closed");
    return Status::Ok();
  }
  // Connected, or connected again (the partitions reopen from their positions on the next
  // Fetch). False, after waiting up to the next reconnect attempt or the deadline, while the
  // broker cannot be reached.
  bool Reachable(Clock::time_point deadline) {
    auto r = reconnect_.Ensure(*conn_, [this] { DetachAll(); });
    if (r.ok()) {
      if (*r && !PostNotifyRecvs().ok()) return false;
      return true;
    }
    std::this_thread::sleep_until(std::min(deadline, std::max(Clock::now(), reconnect_.next_attempt())));
    return false;
  }
  // Before the data endpoint is replaced: nothing may stay attached to it. Positions stay.
  void DetachAll() {
    for (auto& p : parts_) {
      p->opened = false;
      p->segs.clear();
      p->slot.reset();
      p->slot_mapped = nullptr;
      p->watching = false;
      p->cursor = false;
      if (p->need == Part::Need::kNone) p->need = Part::Need::kSeek;
    }
  }
  std::vector<TopicPartition> SelectOrAll(const std::vector<TopicPartition>& v) const {
    return v.empty() ? Assignment() : v;
  }
  Result<Part*> Find(const TopicPartition& tp) {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    for (auto& p : parts_) {
      if (p->tp == tp) return p.get();
    }
    return Status(Errc::kInvalidArgument, tp.topic + "-" + std::to_string(tp.partition) + " is not assigned");
  }
  std::string Name(const Part& p) const { return p.tp.topic + "-" + std::to_string(p.tp.partition); }

  // OpenConsume: the slot and the segments, attached read-only.
  Status Open(Part& p) {
    p.opened = false;
    p.segs.clear();
    p.slot.reset();
    p.slot_mapped = nullptr;
    p.watching = false;
    if (p.topic_id == TopicId(0)) {
      auto d = conn_->Call<protocol::DescribeTopicResponse>(Api::kDescribeTopic,
                                                            protocol::TopicNameRequest{p.tp.topic});
      if (!d.ok()) return d.status();
      p.topic_id = d->topic.id;
    }
    protocol::PartitionRequest req{p.tp.topic, PartitionId(p.tp.partition)};
    RDMQ_ASSIGN_OR_RETURN(auto r, (conn_->Call<protocol::OpenConsumeResponse>(Api::kOpenConsume, req)));
    RDMQ_ASSIGN_OR_RETURN(auto sd, fabric::RegionDescriptor::Decode(std::as_bytes(std::span(r.slot.bytes))));
    RDMQ_ASSIGN_OR_RETURN(p.slot, conn_->data()->Attach(sd));
    p.slot_mapped = p.slot->mapped();
    for (auto& loc : r.segments) RDMQ_RETURN_IF_ERROR(AddSegment(p, std::move(loc)));
    if (!shm_ && !p.buf) {
      // One READ per partition per Poll lands here: up to 1 MiB (Kafka's default
      // max.partition.fetch.bytes) or fetch.max.bytes if smaller; a larger batch grows it.
      p.buf_cap = 64 + std::min<size_t>(cfg_.fetch_max_bytes, size_t{1} << 20);
      RDMQ_ASSIGN_OR_RETURN(p.buf, conn_->fabric().Allocate(p.buf_cap, fabric::kLocalWrite));
    }
    p.opened = true;
    return Status::Ok();
  }

  Status AddSegment(Part& p, protocol::SegmentLocation loc) {
    RDMQ_ASSIGN_OR_RETURN(auto d,
                          fabric::RegionDescriptor::Decode(std::as_bytes(std::span(loc.region.bytes))));
    Seg s;
    RDMQ_ASSIGN_OR_RETURN(s.remote, conn_->data()->Attach(d));
    s.mapped = s.remote->mapped();
    const int64_t base = loc.base_offset.value();
    s.loc = std::move(loc);
    p.segs[base] = std::move(s);
    return Status::Ok();
  }

  Result<Seg*> Segment(Part& p, int64_t base) {
    auto it = p.segs.find(base);
    if (it != p.segs.end()) return &it->second;
    protocol::GetSegmentRequest req{p.tp.topic, PartitionId(p.tp.partition), Offset(base)};
    RDMQ_ASSIGN_OR_RETURN(auto r, (conn_->Call<protocol::GetSegmentResponse>(Api::kGetSegment, req)));
    RDMQ_RETURN_IF_ERROR(AddSegment(p, std::move(r.segment)));
    return &p.segs[base];
  }

  // Copies `len` bytes at `offset` of a remote region into the partition's buffer (at `at`).
  Status Read(Part& p, const fabric::RemoteRegion& r, uint64_t offset, size_t len, size_t at) {
    fabric::WorkRequest wr;
    wr.opcode = fabric::Opcode::kRead;
    wr.tag = kTagRead;
    wr.local = {p.buf->data() + at, len, p.buf.get()};
    wr.remote = &r;
    wr.remote_offset = offset;
    RDMQ_RETURN_IF_ERROR(conn_->data()->Post({&wr, 1}));
    const auto deadline = Clock::now() + cfg_.client.request_timeout;
    fabric::Completion wc[8];
    while (true) {
      const size_t n = conn_->send_cq()->Poll(wc);
      for (size_t i = 0; i < n; ++i) {
        if (wc[i].tag == kTagRead && wc[i].endpoint_id == conn_->data()->id()) {
          if (wc[i].status) return Status(wc[i].status, "READ from " + Name(p));
          return Status::Ok();
        }
      }
      if (Clock::now() > deadline) return Status(Errc::kTimeout, "READ from " + Name(p) + " timed out");
      if (n == 0) (void)conn_->send_cq()->Wait(std::chrono::microseconds(200));
    }
  }

  Status ReadSlot(Part& p, format::PartitionSlot* out) {
    if (p.slot_mapped != nullptr) {
      // The mapping stays readable after the broker revoked this client's grant (an ACL change):
      // the key page says so.
      if (p.slot->revoked()) return Status(fabric::FabricErrc::kRevoked, "partition slot of " + Name(p));
      auto s = format::ReadPartitionSlot(p.slot_mapped);
      if (!s.ok()) return s.status().WithContext("partition slot of " + Name(p));
      *out = *s;
      return Status::Ok();
    }
    // One READ is a snapshot that an update in progress may tear (busy bit, or a CRC that
    // fails); read again after a pause that lets a descheduled storage node finish.
    const auto deadline = Clock::now() + std::chrono::seconds(1);
    Status last;
    for (int attempt = 0;; ++attempt) {
      RDMQ_RETURN_IF_ERROR(Read(p, *p.slot, 0, format::kSlotSize, 0));
      last = format::DecodePartitionSlot(p.buf->data(), out);
      if (last.ok() || last.is(storage::StorageErrc::kBadMagic) ||
          last.is(storage::StorageErrc::kBadVersion) || Clock::now() > deadline) {
        break;
      }
      format::SlotBackoff(attempt);
    }
    return last.WithContext("partition slot of " + Name(p));
  }

  uint64_t SlotGeneration(const Part& p) const {
    if (p.slot_mapped == nullptr) return p.gen;
    return std::atomic_ref<const uint64_t>(*reinterpret_cast<const uint64_t*>(p.slot_mapped))
        .load(std::memory_order_acquire);
  }

  // Resolves a pending reset/seek into a position and a cursor.
  Status Locate(Part& p) {
    protocol::ListOffsetsRequest req{p.tp.topic, PartitionId(p.tp.partition), protocol::kListOffset,
                                     Offset(p.position)};
    if (p.need == Part::Need::kEarliest) req.spec = protocol::kListEarliest;
    if (p.need == Part::Need::kLatest) req.spec = protocol::kListLatest;
    auto r = conn_->Call<protocol::ListOffsetsResponse>(Api::kListOffsets, req);
    if (!r.ok()) {
      if (r.status().is(WireError::kOffsetOutOfRange)) return OutOfRange(p, r.status());
      return r.status();
    }
    p.position = r->offset.value();
    p.cur_seg = r->segment_base.value();
    p.cur_pos = r->position.value();
    p.cursor = true;
    p.need = Part::Need::kNone;
    return Status::Ok();
  }

  // The position is gone (retention) or beyond the end: reset, or report.
  Status OutOfRange(Part& p, const Status& why) {
    if (cfg_.auto_offset_reset == OffsetReset::kNone) {
      p.cursor = false;
      return Status(WireError::kOffsetOutOfRange, Name(p) + ": offset " + std::to_string(p.position) +
                                                      " is out of range (" + std::string(why.context()) +
                                                      "); auto.offset.reset is none");
    }
    RDMQ_LOG(kInfo, "consumer", "position out of range; resetting")
        .kv("partition", Name(p))
        .kv("offset", p.position)
        .kv("to", cfg_.auto_offset_reset == OffsetReset::kEarliest ? "earliest" : "latest");
    p.need = cfg_.auto_offset_reset == OffsetReset::kEarliest ? Part::Need::kEarliest : Part::Need::kLatest;
    p.cursor = false;
    return Locate(p);
  }

  // Reads what is new in one partition (one READ at most) and appends its records to `out`.
  Status Fetch(Part& p, std::vector<ConsumerRecord>* out) {
    if (!p.opened) {
      Status s = Open(p);
      if (!s.ok()) return s.is(Errc::kUnavailable) || s.is(Errc::kTimeout) ? Status::Ok() : s;
    }
    format::PartitionSlot slot;
    Status rs = ReadSlot(p, &slot);
    // A storage node stuck mid-update (stopped, or starved of CPU) is transient: nothing new
    // from this partition in this poll.
    if (rs.is(storage::StorageErrc::kSlotBusy)) return Status::Ok();
    if (!rs.ok() && !rs.is(Errc::kPermissionDenied)) return rs;
    p.gen = rs.ok() ? slot.generation : p.gen;
    if (!rs.ok() || (slot.flags & format::kSlotClosed) != 0) {
      // The slot went away (its region was unregistered: the topic was deleted) or says the
      // log closed (deleted, or the broker is restarting): open the partition again.
      // Or the client's read grant ended: its user may no longer read the topic.
      p.opened = false;
      Status s = Open(p);
      if (s.is(WireError::kUnknownTopic) || s.is(WireError::kTopicAuthorizationFailed)) return s;
      return Status::Ok();
    }
    if (p.need != Part::Need::kNone) RDMQ_RETURN_IF_ERROR(Locate(p));
    if (p.position < slot.log_start_offset.value()) {
      RDMQ_RETURN_IF_ERROR(OutOfRange(
          p, Status(WireError::kOffsetOutOfRange,
                    "retention moved the log start to " + std::to_string(slot.log_start_offset.value()))));
    }
    if (!p.cursor) RDMQ_RETURN_IF_ERROR(Locate(p));
    for (int hop = 0; hop < 16; ++hop) {
      if (p.position >= slot.high_watermark.value() && p.cur_seg == slot.active_segment.value())
        return Status::Ok();
      auto sr = Segment(p, p.cur_seg);
      if (!sr.ok()) {
        if (sr.status().is(WireError::kStaleLocation)) {
          // Deleted by retention under us: reset from the slot's log start.
          if (p.cur_seg < slot.log_start_offset.value()) return OutOfRange(p, sr.status());
          return Status::Ok();  // not created yet (a roll in progress)
        }
        return sr.status();
      }
      Seg& s = **sr;
      const bool active = p.cur_seg == slot.active_segment.value();
      uint64_t end;
      // The active segment ends at the committed position while it is open, and also once sealed
      // while we have not read up to it yet.
      if (active &&
          ((slot.flags & format::kSlotSealed) == 0 || p.cur_pos < slot.committed_position.value())) {
        end = slot.committed_position.value();
      } else {
        if (!s.seal_known) RDMQ_RETURN_IF_ERROR(ReadSeal(p, s));
        if (!s.seal_known) return Status::Ok();  // being sealed: next time
        end = s.seal_end;
      }
      if (p.cur_pos >= end) {
        if (active && (slot.flags & format::kSlotSealed) == 0) return Status::Ok();
        if (!s.seal_known) return Status::Ok();
        // Finished a sealed segment: continue in the next one.
        p.cur_seg = s.seal_next;
        p.cur_pos = 0;
        if (p.position < p.cur_seg) p.position = p.cur_seg;
        continue;
      }
      return Parse(p, s, end, out);
    }
    return Status::Ok();
  }

  Status ReadSeal(Part& p, Seg& s) {
    std::byte rec[format::kRecordSize];
    if (s.mapped != nullptr) {
      std::memcpy(rec, s.mapped + format::kSealRecord, sizeof rec);
    } else {
      RDMQ_RETURN_IF_ERROR(Read(p, *s.remote, format::kSealRecord, sizeof rec, 0));
      std::memcpy(rec, p.buf->data(), sizeof rec);
    }
    format::SealRecord seal;
    if (format::DecodeSealRecord(rec, &seal)) {
      s.seal_known = true;
      s.seal_end = seal.end.value();
      s.seal_next = seal.next_offset.value();
    }
    return Status::Ok();
  }

  Status Parse(Part& p, Seg& s, uint64_t end, std::vector<ConsumerRecord>* out) {
    size_t len = std::min<uint64_t>(end - p.cur_pos, cfg_.fetch_max_bytes);
    if (s.mapped == nullptr) len = std::min(len, p.buf_cap - 64);
    const std::byte* data;
    auto fetch = [&](size_t n) -> Status {
      if (s.mapped != nullptr) {
        data = s.mapped + s.loc.RemoteOffset(rdmq::Position(p.cur_pos));
        return Status::Ok();
      }
      if (64 + n > p.buf_cap) {
        p.buf.reset();
        p.buf_cap = 64 + n;
        RDMQ_ASSIGN_OR_RETURN(p.buf, conn_->fabric().Allocate(p.buf_cap, fabric::kLocalWrite));
      }
      Status st = Read(p, *s.remote, s.loc.RemoteOffset(rdmq::Position(p.cur_pos)), n, 64);
      if (!st.ok()) {
        // The segment went away (retention) or the broker restarted: start over from the slot.
        p.opened = false;
        p.cursor = false;
        if (p.need == Part::Need::kNone) p.need = Part::Need::kSeek;
        return st.is(Errc::kPermissionDenied) || st.is(Errc::kUnavailable) ? Status::Ok() : st;
      }
      data = p.buf->data() + 64;
      return Status::Ok();
    };
    data = nullptr;
    RDMQ_RETURN_IF_ERROR(fetch(len));
    if (data == nullptr) return Status::Ok();
    // A first batch larger than fetch.max.bytes is read whole.
    storage::BatchHeader h;
    {
      const int32_t bl = len >= 12 ? coding::LoadBE<int32_t>(data + 8) : 0;
      const uint64_t total = bl > 0 ? uint64_t(bl) + storage::kBatchLengthOverhead : 0;
      if (total > len && total <= end - p.cur_pos) {
        len = total;
        RDMQ_RETURN_IF_ERROR(fetch(len));
        if (data == nullptr) return Status::Ok();
      }
    }
    size_t pos = 0;
    while (pos < len && out->size() < cfg_.max_poll_records) {
      if (len - pos < storage::kBatchHeaderSize) break;
      const int32_t bl = coding::LoadBE<int32_t>(data + pos + 8);
      if (bl > 0 && uint64_t(bl) + storage::kBatchLengthOverhead > len - pos && pos > 0) break;  // next READ
      const std::span<const std::byte> rest(data + pos, len - pos);
      if (Status st = storage::DecodeBatchHeader(rest, &h); !st.ok()) {
        return Status(Errc::kCorruption, Name(p) + " segment " + std::to_string(p.cur_seg) + " position " +
                                             std::to_string(p.cur_pos + pos) + ": " + st.ToString());
      }
      const std::span<const std::byte> batch(data + pos, h.total_size());
      if (cfg_.check_crcs) {
        if (Status st = storage::VerifyBatchCrc(h, batch); !st.ok()) {
          return Status(Errc::kCorruption, Name(p) + " segment " + std::to_string(p.cur_seg) + " position " +
                                               std::to_string(p.cur_pos + pos) + ": " + st.ToString());
        }
      }
      if (h.next_offset().value() <= p.position || h.is_control()) {
        p.position = std::max(p.position, h.next_offset().value());
        pos += h.total_size();
        continue;
      }
      // A compressed batch's records are decompressed into a buffer that lives until the next
      // Poll; a plain batch's are read in place.
      std::string* inflated = h.is_compressed() ? decompressed_.Next() : nullptr;
      const size_t returned = out->size();
      storage::RecordIterator it(h, batch, inflated);
      storage::RecordView rv;
      bool stopped = false;
      while (it.Next(&rv)) {
        const int64_t off = h.base_offset.value() + rv.offset_delta;
        if (off < p.position) continue;
        if (out->size() >= cfg_.max_poll_records) {
          stopped = true;
          break;
        }
        ConsumerRecord& c = out->emplace_back();
        c.topic = p.tp.topic;
        c.partition = p.tp.partition;
        c.offset = off;
        c.timestamp_ms = h.base_timestamp.value() + rv.timestamp_delta;
        if (rv.key) c.key = std::string_view(reinterpret_cast<const char*>(rv.key->data()), rv.key->size());
        if (rv.value)
          c.value = std::string_view(reinterpret_cast<const char*>(rv.value->data()), rv.value->size());
        if (rv.header_count > 0) {
          storage::HeaderIterator hi(rv.headers, rv.header_count);
          storage::HeaderView hv;
          while (hi.Next(&hv)) {
            RecordHeader rh;
            rh.key = std::string_view(reinterpret_cast<const char*>(hv.key.data()), hv.key.size());
            if (hv.value)
              rh.value = std::string_view(reinterpret_cast<const char*>(hv.value->data()), hv.value->size());
            c.headers.push_back(rh);
          }
        }
        p.position = off + 1;
      }
      if (inflated != nullptr && out->size() == returned) decompressed_.GiveBack();
      if (!stopped && !it.status().ok()) {
        return Status(Errc::kCorruption, Name(p) + " segment " + std::to_string(p.cur_seg) + " position " +
                                             std::to_string(p.cur_pos + pos) + ": " + it.status().ToString());
      }
      if (stopped) break;
      p.position = std::max(p.position, h.next_offset().value());
      pos += h.total_size();
    }
    p.cur_pos += pos;
    return Status::Ok();
  }

  // Nothing new anywhere: wait for a commit, the deadline, or Wakeup().
  Status Sleep(Clock::time_point deadline) {
    // Spin first: a commit that follows within microseconds is seen at once.
    const auto spin_until = std::min(deadline, Clock::now() + cfg_.spin);
    if (shm_) {
      while (Clock::now() < spin_until) {
        for (const auto& p : parts_) {
          if (p->opened && SlotGeneration(*p) != p->gen) return Status::Ok();
        }
        if (wakeup_.load(std::memory_order_acquire)) return Status::Ok();
        CpuRelax();
      }
    }
    const auto slice = std::min(deadline, Clock::now() + std::chrono::milliseconds(100));
    if (shm_ && parts_.size() == 1 && parts_[0]->opened) {
      Part& p = *parts_[0];
      {
        std::lock_guard lock(wake_mu_);
        sleeping_on_ = p.slot.get();
      }
      Status s;
      if (!wakeup_.load(std::memory_order_acquire)) {
        const auto left = std::max(slice - Clock::now(), Clock::duration::zero());
        s = p.slot->WaitWhileEqual(0, p.gen, left);
      }
      {
        std::lock_guard lock(wake_mu_);
        sleeping_on_ = nullptr;
      }
      return s.ok() || s.is(Errc::kTimeout) ? Status::Ok() : s;
    }
    if (parts_.empty()) {
      std::this_thread::sleep_until(std::min(deadline, Clock::now() + std::chrono::milliseconds(10)));
      return Status::Ok();
    }
    // Watch every partition, then wait for a notification on the data endpoint.
    for (auto& pp : parts_) {
      Part& p = *pp;
      if (!p.opened || p.watching) continue;
      protocol::WatchRequest req{p.tp.topic, PartitionId(p.tp.partition), p.gen};
      auto r = conn_->Call<protocol::WatchResponse>(Api::kWatch, req);
      if (!r.ok()) return r.status().is(Errc::kUnavailable) ? Status::Ok() : r.status();
      if (r->generation != p.gen) return Status::Ok();  // something changed meanwhile
      p.watching = true;
    }
    while (Clock::now() < slice && !wakeup_.load(std::memory_order_acquire)) {
      fabric::Completion wc[16];
      const size_t n = conn_->recv_cq()->Poll(wc);
      if (n > 0) {
        std::vector<fabric::RecvRequest> again;
        bool any = false;
        for (size_t i = 0; i < n; ++i) {
          if (wc[i].endpoint_id != conn_->data()->id()) continue;  // before a reconnect
          if (wc[i].status) return Status::Ok();  // the broker went away: the next Poll reconnects
          const uint32_t k = static_cast<uint32_t>(wc[i].tag);
          protocol::Notification note;
          if (k < kNotifyRecvs &&
              protocol::DecodeNotification(notify_->data() + size_t{k} * 64, wc[i].byte_len, &note)) {
            for (auto& p : parts_) {
              if (p->topic_id == note.topic_id && p->tp.partition == note.partition.value())
                p->watching = false;
            }
            any = true;
          }
          if (k < kNotifyRecvs) again.push_back({k, {notify_->data() + size_t{k} * 64, 64, notify_.get()}});
        }
        (void)conn_->data()->PostRecv(again);
        if (any) return Status::Ok();
      }
      const auto left = std::min(slice, Clock::now() + std::chrono::milliseconds(10)) - Clock::now();
      if (left <= Clock::duration::zero()) break;
      (void)conn_->recv_cq()->Wait(left);
    }
    return Status::Ok();
  }

  ConsumerConfig cfg_;
  internal::DecompressedBuffers decompressed_;  // compressed batches' records (views until next Poll)
  std::unique_ptr<client::Connection> conn_;
  Reconnector reconnect_;
  std::unique_ptr<fabric::Region> notify_;
  std::vector<std::unique_ptr<Part>> parts_;
  size_t rr_ = 0;
  bool shm_ = false;
  bool closed_ = false;
  std::atomic<bool> wakeup_{false};
  std::mutex wake_mu_;  // guards sleeping_on_ against Wakeup from another thread
  fabric::RemoteRegion* sleeping_on_ = nullptr;
};

}  // namespace

namespace internal {

Result<std::unique_ptr<Consumer>> MakeOneBrokerConsumer(const ConsumerConfig& config) {
  auto c = std::make_unique<ConsumerImpl>(config);
  RDMQ_RETURN_IF_ERROR(c->Init());
  return std::unique_ptr<Consumer>(std::move(c));
}

}  // namespace internal

Result<std::unique_ptr<Consumer>> Consumer::Create(const ConsumerConfig& config) {
  auto c = std::make_unique<ConsumerImpl>(config);
  RDMQ_RETURN_IF_ERROR(c->Init());
  // A broker of a cluster leads only some partitions: read each from its leader (a group's
  // consumer too; its group is coordinated by the broker it bootstraps from).
  auto cluster = c->DescribeCluster();
  std::unique_ptr<Consumer> reader;
  if (cluster.ok() && cluster->clustered != 0) {
    RDMQ_ASSIGN_OR_RETURN(reader, internal::MakeClusterConsumer(config, std::move(c), *cluster));
  } else {
    reader = std::move(c);
  }
  if (!config.group_id.empty()) return internal::MakeGroupConsumer(config, std::move(reader));
  return reader;
}

}  // namespace rdmq::consumer
