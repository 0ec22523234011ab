#include "local_append.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/storage/record_batch.h"
#include "session.h"

namespace rdmq::broker::internal {

using protocol::WireError;

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

void LocalPrefault::Run() const {
  constexpr uintptr_t kPage = 4096;
  std::byte* a = begin;
  std::byte* b = begin + length;
  a -= reinterpret_cast<uintptr_t>(a) & (kPage - 1);
  b -= reinterpret_cast<uintptr_t>(b) & (kPage - 1);
  if (b <= a) return;
  if (::madvise(a, static_cast<size_t>(b - a), MADV_POPULATE_WRITE) != 0) return;  // unmapped meanwhile
  // A load from every page as well: on some hypervisors the first access to each page of a
  // user mapping costs microseconds (shadow page tables built lazily) even once the kernel has
  // it mapped; paid here, the appending thread's copy later runs at memory speed. A load never
  // changes bytes that a shared producer may already be writing there.
  for (const std::byte* q = a; q < b; q += kPage) (void)*reinterpret_cast<const volatile std::byte*>(q);
}

LocalPrefault LocalAppender::NextPrefault(Partition& p, const SegmentReg& seg, uint64_t end) {
  // Populated 8 MiB ahead, in steps of at least 2 MiB: a step costs one system call (on a
  // thread of the caller's choosing) instead of a page fault per page or readahead window on
  // the appending thread.
  constexpr uint64_t kAhead = 8 << 20;
  constexpr uint64_t kStep = 2 << 20;
  Partition::PrefaultMark& m = p.local_prefault();
  if (m.segment != seg.info.base_offset) m = {seg.info.base_offset, 0};
  const uint64_t cap = seg.info.capacity;
  const uint64_t from = std::max(m.to, end);
  const uint64_t to = std::min(cap, end + kAhead);
  if (to <= from || (to - from < kStep && to != cap)) return {};
  m.to = to;
  return LocalPrefault{seg.info.data() + from, static_cast<size_t>(to - from), seg.info.pin};
}

Status LocalAppender::Check(Partition& p, std::span<const ByteSpan> parts, Identity* who,
                            LocalAppendResult* dup) {
  const uint64_t max = p.config().max_message_bytes;
  int32_t next_seq = -1;
  bool first = true;
  for (const ByteSpan batches : parts) {
    if (batches.empty()) return Status(WireError::kInvalidRequest, "no record batch for " + p.where());
    RDMQ_RETURN_IF_ERROR(CheckPart(p, batches, max, who, &first, &next_seq));
  }
  if (who->producer_id.value() < 0) return Status::Ok();
  return CheckSequence(p, who, dup);
}

Status LocalAppender::CheckPart(Partition& p, ByteSpan batches, uint64_t max, Identity* who,
                                bool* first_batch, int32_t* next_sequence) {
  bool& first = *first_batch;
  int32_t& next_seq = *next_sequence;
  // A compressed batch is decompressed and its records checked here, before anything is copied, so
  // a bad one is refused whole rather than leaving a filler in the log.
  storage::BatchScanner scan(batches, storage::Validation::kCompressedRecords);
  storage::BatchView b;
  while (scan.Next(&b)) {
    const storage::BatchHeader& h = b.header;
    if (h.total_size() > max) {
      return Status(WireError::kRecordTooLarge, "a batch of " + std::to_string(h.total_size()) +
                                                    " bytes for " + p.where() +
                                                    " exceeds max.message.bytes " + std::to_string(max));
    }
    if (h.is_control() || h.is_transactional()) {
      return Status(WireError::kInvalidRequest, "transactional and control batches are not accepted");
    }
    if (first) {
      who->producer_id = h.producer_id;
      who->epoch = h.producer_epoch;
      who->first_sequence = h.base_sequence;
      first = false;
    } else if (h.producer_id != who->producer_id || h.producer_epoch != who->epoch) {
      return Status(WireError::kInvalidRequest, "the batches of one partition come from different producers");
    }
    if (who->producer_id.value() >= 0) {
      if (h.base_sequence < 0) {
        return Status(WireError::kInvalidRequest, "producer " + std::to_string(who->producer_id.value()) +
                                                      " sent a batch without a sequence");
      }
      if (next_seq >= 0 && h.base_sequence != next_seq) {
        return Status(WireError::kOutOfOrderSequence, "the batches of one request are not in sequence");
      }
      next_seq = static_cast<int32_t>(h.base_sequence + h.last_offset_delta + 1);
      who->last_sequence = next_seq - 1;
    }
  }
  if (!scan.status().ok()) return Status(WireError::kCorruptMessage, scan.status().ToString());
  if (scan.consumed() != batches.size()) {
    return Status(WireError::kCorruptMessage, std::to_string(batches.size() - scan.consumed()) +
                                                  " bytes after the last whole batch for " + p.where());
  }
  return Status::Ok();
}

Status LocalAppender::CheckSequence(Partition& p, Identity* who, LocalAppendResult* dup) {
  // Kafka's producer-state rules.
  const std::string id = std::to_string(who->producer_id.value());
  if (const auto seen = p.producers().Epoch(who->producer_id); seen && who->epoch < *seen) {
    return Status(WireError::kInvalidProducerEpoch, "producer " + id + " epoch " +
                                                        std::to_string(who->epoch) + " is older than epoch " +
                                                        std::to_string(*seen) + " seen in " + p.where());
  }
  const ProducerState st = p.producers().Expected(who->producer_id, who->epoch);
  if (who->last_sequence <= st.last_sequence) {
    // A retry of something stored already.
    dup->duplicate = true;
    dup->base_offset = p.producers()
                           .FindBatch(who->producer_id, who->epoch, who->first_sequence, who->last_sequence)
                           .value_or(kNoOffset);
    return Status::Ok();
  }
  if (who->first_sequence != st.last_sequence + 1) {
    return Status(WireError::kOutOfOrderSequence,
                  "producer " + id + " sent sequence " + std::to_string(who->first_sequence) + " to " +
                      p.where() + ", expected " + std::to_string(st.last_sequence + 1));
  }
  return Status::Ok();
}

Result<storage::Reservation> LocalAppender::Reserve(Partition& p, uint64_t length) {
  if (length > p.active().capacity) {
    return Status(WireError::kRecordTooLarge, std::to_string(length) + " bytes do not fit a segment of " +
                                                  p.where() + " (" + std::to_string(p.active().capacity) +
                                                  ")");
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto r = p.log().Reserve(length);
    if (!r.ok()) return Status(protocol::ToWireError(r.status()), r.status().ToString());
    if (r->fits) return *r;
    // The reservation crossed the segment's end: committing it tells the log, which seals the
    // segment there and rolls once everything before it is committed.
    storage::CommitRequest cr{storage::CommitMode::kShared, r->segment, r->position, length, kNoOffset};
    auto out = p.log().Commit(cr);
    if (out.ok() || !out.status().is(storage::StorageErrc::kSegmentFull)) {
      // (Anything but "full" means the log is not in the state this path expects.)
      if (!out.ok()) return Status(protocol::ToWireError(out.status()), out.status().ToString());
    }
    (void)p.SyncSegments();
    publisher_.Publish(p);
  }
  return Status(WireError::kStaleLocation,
                "the active segment of " + p.where() + " is full and waits for earlier shared writes; retry");
}

LocalAppendResult LocalAppender::Append(Partition& p, ByteSpan batches,
                                        std::function<void(Result<Offset>)> done) {
  const ByteSpan one[] = {batches};
  return Append(p, std::span<const ByteSpan>(one), std::move(done));
}

LocalAppendResult LocalAppender::Append(Partition& p, std::span<const ByteSpan> parts,
                                        std::function<void(Result<Offset>)> done) {
  LocalAppendResult res;
  if (p.deleted()) {
    res.status = TopicDeleted(p.topic_name());
    return res;
  }
  res.log_start = p.log().LogStartOffset();
  const uint64_t now = MonoNanos();
  leases_.ReleaseIdle(p, nullptr, protocol::ProduceMode::kShared, now);
  if (const auto& h = p.exclusive()) {
    res.status =
        Status(WireError::kPartitionBusy,
               p.where() + " is held by an exclusive rdmq producer (client '" + h->session->Name() + "')");
    return res;
  }
  Identity who;
  if (Status s = Check(p, parts, &who, &res); !s.ok() || res.duplicate) {
    res.status = s;
    // (A group's duplicate is counted when its requests are appended one by one.)
    if (res.duplicate && parts.size() == 1) Counters::Add(n_.duplicates);
    return res;
  }
  uint64_t length = 0;
  for (const ByteSpan part : parts) length += part.size();
  auto r = Reserve(p, length);
  if (!r.ok()) {
    res.status = r.status();
    return res;
  }
  const SegmentReg* seg = p.FindSegment(r->segment);
  if (seg == nullptr) {
    res.status = Status(Errc::kInternal, "reserved segment of " + p.where() + " is not registered");
    return res;
  }
  std::byte* at = seg->info.data() + r->position.value();
  for (size_t pos = 0; const ByteSpan part : parts) {
    std::memcpy(at + pos, part.data(), part.size());
    pos += part.size();
  }
  res.wrote = true;
  res.prefault = NextPrefault(p, *seg, r->position.value() + length);
  const ByteSpan batches(at, length);
  // Shared writers leave the base offsets to the log (-1); the CRC does not cover them.
  for (size_t pos = 0; pos < batches.size();) {
    storage::BatchHeader h;
    if (!storage::DecodeBatchHeader({at + pos, batches.size() - pos}, &h).ok()) break;
    storage::PatchBaseOffset(at + pos, kNoOffset);
    pos += h.total_size();
  }
  // Checked again where the bytes now are (the producer state cannot have moved under the lock,
  // so this only fails on a broken invariant); a range that fails is replaced by a filler so it
  // leaves no hole behind.
  const Committer c{who.producer_id, who.epoch, /*shared=*/true};
  BatchCheck check = p.Validator().CheckBatches(c, {at, batches.size()});
  if (!check.status.ok()) {
    (void)storage::WriteFillerBatch({at, batches.size()}, kNoOffset, WallMillis());
  }
  storage::CommitRequest cr{storage::CommitMode::kShared, r->segment, r->position, batches.size(), kNoOffset};
  auto out = p.log().Commit(cr);
  if (!out.ok() && check.status.ok()) {
    // The log refused the range: leave a filler there instead of a hole, so later writers'
    // offsets are not held up until the reservation expires.
    check.status = out.status();
    (void)storage::WriteFillerBatch({at, batches.size()}, kNoOffset, WallMillis());
    out = p.log().Commit(cr);
  }
  if (!out.ok()) {
    Counters::Add(n_.commit_errors);
    res.status = Status(protocol::ToWireError(out.status()), out.status().ToString());
    return res;
  }
  if (!check.status.ok()) {
    res.status = Status(protocol::ToWireError(check.status), check.status.ToString());
    Counters::Add(n_.commit_errors);
    std::vector<storage::CompletedRange> completed(out->completed.begin(), out->completed.end());
    std::vector<storage::CompletedRange> dropped(out->dropped.begin(), out->dropped.end());
    leases_.Settle(p, completed, dropped);
    if (!completed.empty()) publisher_.Publish(p);
    return res;
  }
  Counters::Add(n_.commits);
  p.NoteIn(batches.size());
  p.NoteLocalAppend(now);
  if (who.producer_id.value() >= 0) p.producers().Set(who.producer_id, check.next);
  p.MarkDirty();
  if (out->complete) {
    res.base_offset = out->base_offset;
    if (who.producer_id.value() >= 0) {
      p.producers().NoteBatch(who.producer_id, who.epoch,
                              {who.first_sequence, who.last_sequence, res.base_offset});
    }
  } else {
    res.pending = true;
    PendingRange pr;
    pr.producer_id = who.producer_id;
    pr.first_sequence = check.first_sequence;
    pr.epoch = who.epoch;
    pr.last_sequence = who.last_sequence;
    pr.local_done = std::move(done);
    p.AddPending(r->segment, r->position, std::move(pr));
  }
  std::vector<storage::CompletedRange> completed(out->completed.begin(), out->completed.end());
  std::vector<storage::CompletedRange> dropped(out->dropped.begin(), out->dropped.end());
  (void)p.SyncSegments();
  leases_.Settle(p, completed, dropped);
  if (!completed.empty()) publisher_.Publish(p);
  return res;
}

}  // namespace rdmq::broker::internal
