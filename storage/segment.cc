#include "segment.h"

#include <algorithm>
#include <cstring>

#include "rdmq/common/log.h"

namespace rdmq::storage::internal {

namespace {

constexpr uint64_t kPage = 4096;

bool AllZero(const std::byte* p, size_t n) {
  // Word-wise OR; the compiler vectorises it.
  uint64_t acc = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    acc |= w;
  }
  for (; i < n; ++i) acc |= static_cast<uint64_t>(p[i]);
  return acc == 0;
}

// A batch as the log accepts it: offsets assigned, consecutive, count consistent.
bool OffsetsContinue(const BatchHeader& h, Offset expected) {
  return h.base_offset == expected && h.record_count > 0 && h.last_offset_delta == h.record_count - 1;
}

}  // namespace

Segment::Segment(std::string dir, const format::SegmentHeader& header, std::unique_ptr<MappedFile> file,
                 PersistMode mode, uint32_t index_interval)
    : next_offset(header.base_offset),
      dir_(std::move(dir)),
      name_(format::SegmentFileName(header.base_offset)),
      path_(dir_ + "/" + name_),
      header_(header),
      file_(std::move(file)),
      mode_(mode),
      interval_(std::max<uint32_t>(index_interval, 64)) {
  index.reserve(std::min<uint64_t>(header_.capacity / interval_ + 1, 1u << 20));
}

Result<std::unique_ptr<Segment>> Segment::Create(Env* env, const std::string& dir,
                                                 const format::SegmentHeader& header, PersistMode mode,
                                                 uint32_t index_interval, std::unique_ptr<MappedFile> spare,
                                                 const std::string& spare_path) {
  const std::string name = format::SegmentFileName(header.base_offset);
  const std::string path = dir + "/" + name;
  const size_t size = format::kSegmentHeaderSize + header.capacity;
  std::string tmp = path + ".tmp";
  std::unique_ptr<MappedFile> file;
  if (spare != nullptr && spare->size() == size) {
    file = std::move(spare);
    tmp = spare_path;
  } else {
    if (spare != nullptr) {  // another size: of no use
      spare.reset();
      (void)env->DeleteFile(spare_path);
    }
    if (env->FileExists(tmp)) RDMQ_RETURN_IF_ERROR(env->DeleteFile(tmp));
    RDMQ_ASSIGN_OR_RETURN(file, env->CreateMapped(tmp, size));
  }
  auto fail = [&](const Status& s, const std::string& name_now) -> Status {
    Status d = env->DeleteFile(name_now);
    if (!d.ok()) {
      RDMQ_LOG(kWarn, "storage", "could not remove a half-created segment").kv("error", d);
    }
    return s;
  };
  format::EncodeSegmentHeader(header, file->data());
  // The header must be durable before the name is (whatever the log's persistence mode: creating
  // a segment is rare and a valid name must always lead to a valid header).
  if (Status s = file->Persist(file->data(), format::kSegmentHeaderSize); !s.ok()) return fail(s, tmp);
  if (Status s = env->RenameFile(tmp, path); !s.ok()) return fail(s, tmp);
  if (Status s = env->SyncDir(dir); !s.ok()) return fail(s, path);
  return std::make_unique<Segment>(dir, header, std::move(file), mode, index_interval);
}

std::string Segment::Where(Position position) const {
  return "segment " + name_ + " position " + std::to_string(position.value());
}

Status Segment::Persist(const void* addr, size_t len) {
  if (mode_ == PersistMode::kNone || len == 0) return Status::Ok();
  return file_->Persist(addr, len);
}

void NoteEpoch(std::vector<EpochStart>* epochs, const BatchHeader& h) {
  if (h.leader_epoch >= 0 && (epochs->empty() || h.leader_epoch > epochs->back().epoch)) {
    epochs->push_back(EpochStart{h.leader_epoch, h.base_offset});
  }
}

void Segment::NoteBatch(Position pos, const BatchHeader& h) {
  NoteEpoch(&epochs, h);
  if (pos >= next_index_pos_) {
    index.push_back(IndexEntry{h.base_offset, pos, max_ts});
    next_index_pos_ = pos + interval_;
  }
  max_ts = std::max(max_ts, h.max_timestamp);
}

const IndexEntry* Segment::IndexFloor(Offset offset) const {
  auto it = std::upper_bound(index.begin(), index.end(), offset,
                             [](Offset o, const IndexEntry& e) { return o < e.offset; });
  return it == index.begin() ? nullptr : &*std::prev(it);
}

Position Segment::IndexLookupTime(TimestampMs ts) const {
  // Last entry whose predecessors are all older than ts.
  auto it = std::lower_bound(index.begin(), index.end(), ts,
                             [](const IndexEntry& e, TimestampMs t) { return e.max_ts_before < t; });
  return it == index.begin() ? Position(0) : std::prev(it)->position;
}

Status Segment::WriteCheckpoint() {
  format::Checkpoint c;
  c.sequence = checkpoint_seq + 1;
  c.committed = committed;
  c.next_offset = next_offset;
  c.max_timestamp = max_ts;
  std::byte* slot = file_->data() + ((c.sequence & 1) ? format::kCheckpointA : format::kCheckpointB);
  format::EncodeCheckpoint(c, slot);
  RDMQ_RETURN_IF_ERROR(Persist(slot, format::kRecordSize));
  checkpoint_seq = c.sequence;
  commits_since_checkpoint = 0;
  return Status::Ok();
}

Status Segment::Seal() {
  format::SealRecord s;
  s.end = committed;
  s.next_offset = next_offset;
  s.max_timestamp = max_ts;
  std::byte* rec = file_->data() + format::kSealRecord;
  format::EncodeSealRecord(s, rec);
  RDMQ_RETURN_IF_ERROR(Persist(rec, format::kRecordSize));
  sealed = true;
  pending.clear();
  crossing = kNoPosition;
  samples.clear();
  return Status::Ok();
}

void Segment::LoadSealed(const format::SealRecord& seal) {
  sealed = true;
  const Position end = seal.end;
  if (!Adopt(WalkHeaders(end), end, seal.next_offset)) {
    RDMQ_LOG(kError, "storage", "sealed segment is damaged; reads past the damage will fail")
        .kv("segment", path_)
        .kv("position", corrupt_at)
        .kv("seal_end", end);
  }
  committed = end;
  next_offset = seal.next_offset;
  max_ts = seal.max_timestamp;
}

Segment::ScanResult Segment::RecoverActive() {
  ScanResult out;
  const std::byte* h = file_->data();
  format::Checkpoint a, b;
  // Every committed batch holds at least one offset: a checkpoint past position 0 is past base.
  auto plausible = [&](const format::Checkpoint& c) {
    return c.committed <= end() &&
           (c.committed == Position(0) ? c.next_offset == base() : c.next_offset > base());
  };
  const bool va = format::DecodeCheckpoint(h + format::kCheckpointA, &a) && plausible(a);
  const bool vb = format::DecodeCheckpoint(h + format::kCheckpointB, &b) && plausible(b);
  const format::Checkpoint* ckpt = nullptr;
  if (va && vb) {
    ckpt = a.sequence > b.sequence ? &a : &b;
  } else if (va) {
    ckpt = &a;
  } else if (vb) {
    ckpt = &b;
  }
  checkpoint_seq = std::max(va ? a.sequence : 0, vb ? b.sequence : 0);

  const Position start = ckpt ? ckpt->committed : Position(0);
  const Offset start_next = ckpt ? ckpt->next_offset : base();

  // Header walk over the checkpointed (durable) part: rebuilds the index.
  Walk walk = WalkHeaders(start);
  max_ts = std::max(max_ts, walk.max_ts);
  if (!Adopt(std::move(walk), start, start_next)) {
    RDMQ_LOG(kError, "storage", "checkpointed data is damaged; reads of it will fail")
        .kv("segment", path_)
        .kv("position", corrupt_at)
        .kv("checkpoint", start);
    if (ckpt) {
      // Resume indexing at the checkpoint, which is authoritative.
      index.push_back(IndexEntry{start_next, start, ckpt->max_timestamp});
      next_index_pos_ = start + interval_;
    }
  }
  if (ckpt) max_ts = std::max(max_ts, ckpt->max_timestamp);

  // CRC-checked scan past the checkpoint.
  out.start = start;
  Position pos = start;
  Offset next = start_next;
  while (end() - pos >= kBatchHeaderSize) {
    BatchHeader bh;
    if (!ValidateBatch(bytes(pos, end()), Validation::kCrc, &bh).ok()) break;
    if (!OffsetsContinue(bh, next)) break;
    NoteBatch(pos, bh);
    pos += bh.total_size();
    next = bh.next_offset();
    ++out.batches_scanned;
    out.bytes_scanned += bh.total_size();
  }
  committed = pos;
  next_offset = next;
  return out;
}

Result<Segment::ZeroResult> Segment::TruncateTail(bool whole) {
  ZeroResult out;
  const Position cap = end();
  Position last_nonzero = committed;
  Position run_start = kNoPosition;  // a run of zeroed chunks waiting to be persisted
  Position pos = committed;
  while (pos < cap) {
    const Position page_end = std::min(cap, Position((pos.value() / kPage + 1) * kPage));
    std::byte* p = at(pos);
    const uint64_t n = page_end - pos;
    if (!AllZero(p, n)) {
      uint64_t last = n;  // bytes up to the last nonzero one
      while (last > 0 && p[last - 1] == std::byte{0}) --last;
      last_nonzero = pos + last;
      std::memset(p, 0, n);
      ++out.zeroed_pages;
      if (run_start == kNoPosition) run_start = pos;
    } else if (run_start != kNoPosition && !whole) {
      RDMQ_RETURN_IF_ERROR(PersistData(run_start, pos - run_start));
      run_start = kNoPosition;
    }
    pos = page_end;
  }
  if (whole) run_start = committed;
  if (run_start != kNoPosition) RDMQ_RETURN_IF_ERROR(PersistData(run_start, cap - run_start));
  out.nonzero_bytes = last_nonzero - committed;
  reservation().store(committed.value(), std::memory_order_release);
  RDMQ_RETURN_IF_ERROR(Persist(file_->data() + format::kReservationWord, 8));
  return out;
}

Segment::Walk Segment::WalkHeaders(Position to) const {
  Walk w;
  w.next = base();
  Position pos{0};
  while (pos < to) {
    BatchHeader h;
    if (!DecodeBatchHeader(bytes(pos, to), &h).ok() || !OffsetsContinue(h, w.next)) break;
    if (pos >= w.next_index_pos) {  // as NoteBatch
      w.index.push_back(IndexEntry{h.base_offset, pos, w.max_ts});
      w.next_index_pos = pos + interval_;
    }
    w.max_ts = std::max(w.max_ts, h.max_timestamp);
    NoteEpoch(&w.epochs, h);
    pos += h.total_size();
    w.next = h.next_offset();
  }
  w.reached = pos;
  return w;
}

bool Segment::Adopt(Walk walk, Position end, Offset next) {
  index = std::move(walk.index);
  epochs = std::move(walk.epochs);
  next_index_pos_ = walk.next_index_pos;
  corrupt_at = kNoPosition;
  damaged_end = Position(0);
  if (walk.reached == end && walk.next == next) return true;
  // Damaged: headers the walk read may name offsets at or past `next` (which the record or
  // checkpoint, not the headers, decides); what they noted is not the log's.
  std::erase_if(epochs, [&](const EpochStart& e) { return e.start >= next; });
  std::erase_if(index, [&](const IndexEntry& e) { return e.offset >= next || e.position >= end; });
  corrupt_at = walk.reached;
  damaged_end = end;
  return false;
}

void Segment::CutTo(Walk walk, Position end, Offset next, TimestampMs max_ts_floor) {
  max_ts = std::max(walk.max_ts, max_ts_floor);
  if (!Adopt(std::move(walk), end, next)) {
    RDMQ_LOG(kError, "storage", "data below a truncation point is damaged; reads of it will fail")
        .kv("segment", path_)
        .kv("position", corrupt_at)
        .kv("truncation_point", end);
    index.push_back(IndexEntry{next, end, max_ts});
    next_index_pos_ = end + interval_;
  }
  committed = end;
  next_offset = next;
  sealed = false;
  commits_since_checkpoint = 0;
  pending.clear();
  crossing = kNoPosition;
  samples.clear();
  boundary_in_capacity = Position(0);
}

Status Segment::WriteTruncationRecord(const format::TruncationRecord& r) {
  std::byte* rec = file_->data() + format::kTruncationRecord;
  format::EncodeTruncationRecord(r, rec);
  return Persist(rec, format::kRecordSize);
}

Result<Segment::ZeroResult> Segment::FinishTruncation() {
  std::byte* h = file_->data();
  std::memset(h + format::kSealRecord, 0, format::kRecordSize);
  RDMQ_RETURN_IF_ERROR(Persist(h + format::kSealRecord, format::kRecordSize));
  RDMQ_ASSIGN_OR_RETURN(ZeroResult z, TruncateTail(/*whole=*/true));
  // Both slots get the cut state, with sequences above any they held: a slot left from before
  // (this segment's time as the active one, or the truncated log's) may name a position past the
  // cut, and recovery falls back to the other slot when the newer one is torn.
  for (const size_t at : {format::kCheckpointA, format::kCheckpointB}) {
    format::Checkpoint c;
    if (format::DecodeCheckpoint(h + at, &c)) checkpoint_seq = std::max(checkpoint_seq, c.sequence);
  }
  RDMQ_RETURN_IF_ERROR(WriteCheckpoint());
  RDMQ_RETURN_IF_ERROR(WriteCheckpoint());
  std::memset(h + format::kTruncationRecord, 0, format::kRecordSize);
  RDMQ_RETURN_IF_ERROR(Persist(h + format::kTruncationRecord, format::kRecordSize));
  return z;
}

}  // namespace rdmq::storage::internal
