#include "rdmq/storage/format.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include "layout_check.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/crc32c.h"

namespace rdmq::storage::format {

using coding::LoadLE;
using coding::StoreLE;

// The layouts of format.h, row by row as docs/storage-format.md's tables give them:
// (constant, documented offset, documented size).
static_assert(layout::Tiles({{kHdrMagic, 0, 8},
                             {kHdrVersion, 8, 4},
                             {kHdrHeaderSize, 12, 4},
                             {kHdrTopic, 16, 8},
                             {kHdrPartition, 24, 4},
                             {kHdrFlags, 28, 4},
                             {kHdrBaseOffset, 32, 8},
                             {kHdrCapacity, 40, 8},
                             {kHdrCreated, 48, 8},
                             {kHdrCrc, 56, 4},
                             {60, 60, 4},  // zero
                             {kReservationWord, 64, 8},
                             {72, 72, 56},  // zero: the rest of the reservation word's cache line
                             {kSealRecord, 128, kRecordSize},
                             {kCheckpointA, 192, kRecordSize},
                             {kCheckpointB, 256, kRecordSize},
                             {kTruncationRecord, 320, kRecordSize},
                             {384, 384, 3712}},  // zero, reserved
                            kSegmentHeaderSize),
              "segment header: docs/storage-format.md, \"Header: bytes 0 .. 4095\"");
static_assert(kHdrCrcCovered == kHdrCrc, "the header CRC covers the bytes before it");
static_assert(kRecordSize == 64 && kRecordCrc == kRecordSize - 4, "64-byte records end with their CRC");
static_assert(
    layout::Tiles({{kSealEnd, 0, 8},
                   {kSealNextOffset, 8, 8},
                   {kSealMaxTimestamp, 16, 8},
                   {kSealFlags, 24, 4},
                   {28, 28, 32},  // zero
                   {kRecordCrc, 60, 4}},
                  kRecordSize),
    "seal and truncation records: docs/storage-format.md, \"Seal record\" and \"Truncation record\"");
static_assert(layout::Tiles({{kCkptSequence, 0, 8},
                             {kCkptCommitted, 8, 8},
                             {kCkptNextOffset, 16, 8},
                             {kCkptMaxTimestamp, 24, 8},
                             {kCkptFlags, 32, 4},
                             {36, 36, 24},  // zero
                             {kRecordCrc, 60, 4}},
                            kRecordSize),
              "checkpoint slot: docs/storage-format.md, \"Checkpoint slots A and B\"");
static_assert(layout::Tiles({{kSlotGeneration, 0, 8},
                             {kSlotMagicAt, 8, 4},
                             {kSlotVersionAt, 12, 2},
                             {kSlotFlags, 14, 2},
                             {kSlotActiveSegment, 16, 8},
                             {kSlotCommitted, 24, 8},
                             {kSlotHighWatermark, 32, 8},
                             {kSlotLogStart, 40, 8},
                             {kSlotCapacity, 48, 8},
                             {56, 56, 4},  // zero
                             {kRecordCrc, 60, 4}},
                            kSlotSize),
              "partition slot: docs/storage-format.md, \"Partition slot\"");
static_assert(kSlotFileSize == 4096 && kSlotSize == 64,
              "partition.slot is 4096 bytes, the slot its first 64");
// The reservation word is changed by 8-byte atomics (local and RDMA FETCH_ADD) and sits alone
// on its cache line.
static_assert(kReservationWord % 64 == 0, "the reservation word starts a cache line");

std::string SegmentFileName(Offset base) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020lld.seg", static_cast<long long>(base.value()));
  return buf;
}

bool ParseSegmentFileName(const std::string& name, Offset* base) {
  if (name.size() != 24 || name.compare(20, 4, ".seg") != 0) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < 20; ++i) {
    const char c = name[i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
  }
  *base = Offset(static_cast<int64_t>(v));
  return true;
}

void EncodeSegmentHeader(const SegmentHeader& h, std::byte* out) {
  std::memset(out, 0, 64);
  StoreLE<uint64_t>(out + kHdrMagic, kSegmentMagic);
  StoreLE<uint32_t>(out + kHdrVersion, h.version);
  StoreLE<uint32_t>(out + kHdrHeaderSize, static_cast<uint32_t>(kSegmentHeaderSize));
  StoreLE<uint64_t>(out + kHdrTopic, h.topic.value());
  StoreLE<int32_t>(out + kHdrPartition, h.partition.value());
  StoreLE<uint32_t>(out + kHdrFlags, h.flags);
  StoreLE<int64_t>(out + kHdrBaseOffset, h.base_offset.value());
  StoreLE<uint64_t>(out + kHdrCapacity, h.capacity);
  StoreLE<int64_t>(out + kHdrCreated, h.created.value());
  StoreLE<uint32_t>(out + kHdrCrc, crc32c::Value(out, kHdrCrcCovered));
}

Status DecodeSegmentHeader(std::span<const std::byte> file, SegmentHeader* out) {
  if (file.size() < kSegmentHeaderSize) {
    return Status(StorageErrc::kTruncatedFile, "file is " + std::to_string(file.size()) +
                                                   " bytes, shorter than the 4096-byte segment header");
  }
  const std::byte* p = file.data();
  if (LoadLE<uint64_t>(p + kHdrMagic) != kSegmentMagic) {
    return Status(StorageErrc::kBadMagic, "the first 8 bytes are not \"RDQMSEG\\n\"");
  }
  SegmentHeader h;
  h.version = LoadLE<uint32_t>(p + kHdrVersion);
  if (h.version != kSegmentVersion) {
    return Status(StorageErrc::kBadVersion,
                  "segment format version " + std::to_string(h.version) + " (this build reads version 1)");
  }
  if (LoadLE<uint32_t>(p + kHdrHeaderSize) != kSegmentHeaderSize) {
    return Status(StorageErrc::kCorruptHeader,
                  "header size " + std::to_string(LoadLE<uint32_t>(p + kHdrHeaderSize)) + " is not 4096");
  }
  const uint32_t stored = LoadLE<uint32_t>(p + kHdrCrc);
  const uint32_t computed = crc32c::Value(p, kHdrCrcCovered);
  if (stored != computed) {
    return Status(StorageErrc::kCorruptHeader, "header CRC mismatch (stored " + std::to_string(stored) +
                                                   ", computed " + std::to_string(computed) + ")");
  }
  h.topic = TopicId(LoadLE<uint64_t>(p + kHdrTopic));
  h.partition = PartitionId(LoadLE<int32_t>(p + kHdrPartition));
  h.flags = LoadLE<uint32_t>(p + kHdrFlags);
  h.base_offset = Offset(LoadLE<int64_t>(p + kHdrBaseOffset));
  h.capacity = LoadLE<uint64_t>(p + kHdrCapacity);
  h.created = TimestampMs(LoadLE<int64_t>(p + kHdrCreated));
  if (h.base_offset.value() < 0) {
    return Status(StorageErrc::kCorruptHeader,
                  "negative base offset " + std::to_string(h.base_offset.value()));
  }
  *out = h;
  return Status::Ok();
}

namespace {

void SealCrc(std::byte* out) { StoreLE<uint32_t>(out + kRecordCrc, crc32c::Value(out, kRecordCrc)); }
bool CrcOk(const std::byte* in) { return LoadLE<uint32_t>(in + kRecordCrc) == crc32c::Value(in, kRecordCrc); }

// The seal and truncation records share one layout (an end, a next offset, a max timestamp, flags
// and the CRC); a record is valid when its CRC matches and its own flag is set.
void EncodeEndRecord(Position end, Offset next_offset, TimestampMs max_timestamp, uint32_t flag,
                     std::byte out[kRecordSize]) {
  std::memset(out, 0, kRecordSize);
  StoreLE<uint64_t>(out + kSealEnd, end.value());
  StoreLE<int64_t>(out + kSealNextOffset, next_offset.value());
  StoreLE<int64_t>(out + kSealMaxTimestamp, max_timestamp.value());
  StoreLE<uint32_t>(out + kSealFlags, flag);
  SealCrc(out);
}

template <class Record>
bool DecodeEndRecord(const std::byte in[kRecordSize], uint32_t flag, Record* out) {
  if (!CrcOk(in) || (LoadLE<uint32_t>(in + kSealFlags) & flag) == 0) return false;
  out->end = Position(LoadLE<uint64_t>(in + kSealEnd));
  out->next_offset = Offset(LoadLE<int64_t>(in + kSealNextOffset));
  out->max_timestamp = TimestampMs(LoadLE<int64_t>(in + kSealMaxTimestamp));
  return true;
}

}  // namespace

void EncodeSealRecord(const SealRecord& s, std::byte out[kRecordSize]) {
  EncodeEndRecord(s.end, s.next_offset, s.max_timestamp, kSealedFlag, out);
}

bool DecodeSealRecord(const std::byte in[kRecordSize], SealRecord* out) {
  return DecodeEndRecord(in, kSealedFlag, out);
}

void EncodeTruncationRecord(const TruncationRecord& t, std::byte out[kRecordSize]) {
  EncodeEndRecord(t.end, t.next_offset, t.max_timestamp, kTruncatingFlag, out);
}

bool DecodeTruncationRecord(const std::byte in[kRecordSize], TruncationRecord* out) {
  return DecodeEndRecord(in, kTruncatingFlag, out);
}

void EncodeCheckpoint(const Checkpoint& c, std::byte out[kRecordSize]) {
  std::memset(out, 0, kRecordSize);
  StoreLE<uint64_t>(out + kCkptSequence, c.sequence);
  StoreLE<uint64_t>(out + kCkptCommitted, c.committed.value());
  StoreLE<int64_t>(out + kCkptNextOffset, c.next_offset.value());
  StoreLE<int64_t>(out + kCkptMaxTimestamp, c.max_timestamp.value());
  SealCrc(out);
}

bool DecodeCheckpoint(const std::byte in[kRecordSize], Checkpoint* out) {
  if (!CrcOk(in)) return false;
  Checkpoint c;
  c.sequence = LoadLE<uint64_t>(in + kCkptSequence);
  if (c.sequence == 0) return false;
  c.committed = Position(LoadLE<uint64_t>(in + kCkptCommitted));
  c.next_offset = Offset(LoadLE<int64_t>(in + kCkptNextOffset));
  c.max_timestamp = TimestampMs(LoadLE<int64_t>(in + kCkptMaxTimestamp));
  *out = c;
  return true;
}

void EncodePartitionSlot(const PartitionSlot& s, std::byte out[kSlotSize]) {
  std::memset(out, 0, kSlotSize);
  StoreLE<uint64_t>(out + kSlotGeneration, s.generation);
  StoreLE<uint32_t>(out + kSlotMagicAt, kSlotMagic);
  StoreLE<uint16_t>(out + kSlotVersionAt, kSlotVersion);
  StoreLE<uint16_t>(out + kSlotFlags, s.flags);
  StoreLE<int64_t>(out + kSlotActiveSegment, s.active_segment.value());
  StoreLE<uint64_t>(out + kSlotCommitted, s.committed_position.value());
  StoreLE<int64_t>(out + kSlotHighWatermark, s.high_watermark.value());
  StoreLE<int64_t>(out + kSlotLogStart, s.log_start_offset.value());
  StoreLE<uint64_t>(out + kSlotCapacity, s.active_capacity);
  SealCrc(out);
}

Status DecodePartitionSlot(const std::byte in[kSlotSize], PartitionSlot* out) {
  if ((LoadLE<uint64_t>(in + kSlotGeneration) & kSlotBusyBit) != 0) {
    return Status(StorageErrc::kSlotBusy, "partition slot is being updated");
  }
  if (LoadLE<uint32_t>(in + kSlotMagicAt) != kSlotMagic) {
    return Status(StorageErrc::kBadMagic, "partition slot magic is not \"RSLT\"");
  }
  if (LoadLE<uint16_t>(in + kSlotVersionAt) != kSlotVersion) {
    return Status(
        StorageErrc::kBadVersion,
        "partition slot version " + std::to_string(LoadLE<uint16_t>(in + kSlotVersionAt)) + " (expected 1)");
  }
  if (!CrcOk(in)) return Status(StorageErrc::kCorruptHeader, "partition slot CRC mismatch (torn read?)");
  PartitionSlot s;
  s.generation = LoadLE<uint64_t>(in + kSlotGeneration);
  s.flags = LoadLE<uint16_t>(in + kSlotFlags);
  s.active_segment = Offset(LoadLE<int64_t>(in + kSlotActiveSegment));
  s.committed_position = Position(LoadLE<uint64_t>(in + kSlotCommitted));
  s.high_watermark = Offset(LoadLE<int64_t>(in + kSlotHighWatermark));
  s.log_start_offset = Offset(LoadLE<int64_t>(in + kSlotLogStart));
  s.active_capacity = LoadLE<uint64_t>(in + kSlotCapacity);
  *out = s;
  return Status::Ok();
}

void SlotBackoff(int attempt) {
  if (attempt < 64) {
    __builtin_ia32_pause();
  } else if (attempt < 128) {
    sched_yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(std::min(100, attempt - 127)));
  }
}

Result<PartitionSlot> ReadPartitionSlot(const void* slot, std::chrono::nanoseconds patience) {
  auto* words = static_cast<uint64_t*>(const_cast<void*>(slot));
  const auto deadline = std::chrono::steady_clock::now() + patience;
  Status last;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) {
      if ((attempt & 15) == 0 && std::chrono::steady_clock::now() > deadline) break;
      SlotBackoff(attempt);
    }
    // Seqlock read: generation (acquire), body, fence, generation again; pairs with
    // StorePartitionSlot. A busy or changed generation means an update was in progress.
    const uint64_t gen = std::atomic_ref<uint64_t>(words[0]).load(std::memory_order_acquire);
    if ((gen & kSlotBusyBit) != 0) {
      last =
          Status(StorageErrc::kSlotBusy, "partition slot stayed mid-update (is the storage node stopped?)");
      continue;
    }
    alignas(8) std::byte snap[kSlotSize];
    StoreLE<uint64_t>(snap, gen);
    for (size_t w = 1; w < kSlotSize / 8; ++w) {
      StoreLE<uint64_t>(snap + 8 * w, std::atomic_ref<uint64_t>(words[w]).load(std::memory_order_relaxed));
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (std::atomic_ref<uint64_t>(words[0]).load(std::memory_order_relaxed) != gen) continue;
    PartitionSlot s;
    last = DecodePartitionSlot(snap, &s);
    if (last.ok()) return s;
    // A stable snapshot that fails: not a torn read. Magic and version are final; a CRC
    // mismatch is re-read a few times in case of a writer that does not use the busy bit.
    if (last.is(StorageErrc::kBadMagic) || last.is(StorageErrc::kBadVersion) || attempt > 256) return last;
  }
  return last;
}

void StorePartitionSlot(void* slot, const PartitionSlot& s) {
  alignas(8) std::byte enc[kSlotSize];
  EncodePartitionSlot(s, enc);
  auto* words = static_cast<uint64_t*>(slot);
  auto gen_word = std::atomic_ref<uint64_t>(words[0]);
  gen_word.store(gen_word.load(std::memory_order_relaxed) | kSlotBusyBit, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);  // the busy bit before any body store
  for (size_t w = 1; w < kSlotSize / 8; ++w) {
    std::atomic_ref<uint64_t>(words[w]).store(LoadLE<uint64_t>(enc + 8 * w), std::memory_order_relaxed);
  }
  gen_word.store(s.generation & ~kSlotBusyBit, std::memory_order_release);
}

}  // namespace rdmq::storage::format
