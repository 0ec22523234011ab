// On-media and remotely read structures of a partition log: the segment header (with its
// reservation word, seal record and checkpoint slots) and the partition slot. These are protocols:
// remote producers FETCH_ADD the reservation word, remote consumers READ the partition slot and
// the seal record. docs/storage-format.md specifies every byte; this header is the code side of
// that spec (format.cc checks at compile time that the offsets below are the documented ones).
// All fields are little-endian (rdmq's own structures; record batches are Kafka's,
// big-endian).
//
// Segment file `<base offset, 20 digits>.seg`:
//   [0, 4096)      header
//     0   u64 magic "RDQMSEG\n"          8   u32 version (1)      12  u32 header size (4096)
//     16  u64 topic id                   24  i32 partition        28  u32 flags (0)
//     32  i64 base offset                40  u64 capacity (bytes of the data area)
//     48  i64 creation time (ms since the epoch)                  56  u32 CRC-32C of bytes 0..55
//     60  u32 zero
//     64  u64 reservation word, alone on its cache line [64, 128); changed only by atomics
//     128 seal record (64 bytes)         192 checkpoint slot A    256 checkpoint slot B
//     320 truncation record (64 bytes)   384..4095 zero
//   [4096, 4096 + capacity)  record batches back to back; position p is file offset 4096 + p.
//
// Seal record (64 bytes):  0 u64 end position, 8 i64 next offset, 16 i64 max timestamp,
//   24 u32 flags (bit 0: sealed), 28..59 zero, 60 u32 CRC-32C of bytes 0..59.
//   Valid iff the CRC matches and bit 0 is set; then the segment holds exactly the batches in
//   [0, end position) and no more will ever be added.
// Truncation record (64 bytes): 0 u64 end position, 8 i64 next offset, 16 i64 max timestamp,
//   24 u32 flags (bit 0: truncating), 28..59 zero, 60 u32 CRC-32C of bytes 0..59. All zero except
//   while PartitionLog::TruncateTo (or the recovery that finishes it) cuts the log at this
//   segment: valid iff the CRC matches and bit 0 is set; then the log ends at that position of
//   this segment, and every later segment is a leftover to delete.
// Checkpoint slot (64 bytes): 0 u64 sequence, 8 u64 committed position, 16 i64 next offset,
//   24 i64 max timestamp, 32 u32 flags (0), 36..59 zero, 60 u32 CRC-32C of bytes 0..59.
//   Valid iff the CRC matches and the sequence is not 0; the valid slot with the larger
//   sequence is the newest. Everything before its committed position is durable.
//
// Partition slot: file `partition.slot`, 4096 bytes, of which the first 64 are:
//   0  u64 generation (changes on every publish; futex waiters watch its low 32 bits)
//   8  u32 magic "RSLT"  12 u16 version (1)  14 u16 flags (bit 0: active segment sealed,
//                                                          bit 1: log closed)
//   16 i64 active segment base offset    24 u64 committed position in the active segment
//   32 i64 high watermark (offset after the last committed record)
//   40 i64 log start offset              48 u64 active segment capacity
//   56 u32 zero                          60 u32 CRC-32C of bytes 0..59
// A single writer updates it; a reader takes a 64-byte snapshot and accepts it only when the
// magic and CRC match, else reads again (the snapshot was torn by a concurrent update).
//
// Threading: pure functions. Errors: StorageErrc::kBadMagic, kBadVersion, kCorruptHeader,
// kTruncatedFile.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "rdmq/common/status.h"
#include "rdmq/common/types.h"
#include "rdmq/storage/errors.h"

namespace rdmq::storage::format {

// On media: 52 44 51 4D 53 45 47 0A ("RDQMSEG\n"). Every segment file carries these bytes.
inline constexpr uint64_t kSegmentMagic = 0x0a4745534d514452ULL;
inline constexpr uint32_t kSegmentVersion = 1;
inline constexpr size_t kSegmentHeaderSize = 4096;

inline constexpr size_t kHdrMagic = 0;
inline constexpr size_t kHdrVersion = 8;
inline constexpr size_t kHdrHeaderSize = 12;
inline constexpr size_t kHdrTopic = 16;
inline constexpr size_t kHdrPartition = 24;
inline constexpr size_t kHdrFlags = 28;
inline constexpr size_t kHdrBaseOffset = 32;
inline constexpr size_t kHdrCapacity = 40;
inline constexpr size_t kHdrCreated = 48;
inline constexpr size_t kHdrCrc = 56;
inline constexpr size_t kHdrCrcCovered = 56;

inline constexpr size_t kReservationWord = 64;
inline constexpr size_t kSealRecord = 128;
inline constexpr size_t kCheckpointA = 192;
inline constexpr size_t kCheckpointB = 256;
inline constexpr size_t kTruncationRecord = 320;
inline constexpr size_t kRecordSize = 64;  // seal record and checkpoint slots
inline constexpr size_t kRecordCrc = 60;   // CRC position in a 64-byte record (and the slot)
inline constexpr uint32_t kSealedFlag = 1;

// Seal record fields (offsets within the record).
inline constexpr size_t kSealEnd = 0;
inline constexpr size_t kSealNextOffset = 8;
inline constexpr size_t kSealMaxTimestamp = 16;
inline constexpr size_t kSealFlags = 24;

// The truncation record has the seal record's layout (the fields above); its flag:
inline constexpr uint32_t kTruncatingFlag = 1;

// Checkpoint slot fields.
inline constexpr size_t kCkptSequence = 0;
inline constexpr size_t kCkptCommitted = 8;
inline constexpr size_t kCkptNextOffset = 16;
inline constexpr size_t kCkptMaxTimestamp = 24;
inline constexpr size_t kCkptFlags = 32;

inline constexpr uint32_t kSlotMagic = 0x544c5352;  // "RSLT" on media
inline constexpr uint16_t kSlotVersion = 1;
inline constexpr size_t kSlotFileSize = 4096;
inline constexpr size_t kSlotSize = 64;
inline constexpr uint16_t kSlotSealed = 1;  // the active segment is sealed; a new one follows
inline constexpr uint16_t kSlotClosed = 2;  // the log is closed; nothing more will be published

// Partition slot fields (offsets within the 64-byte slot; its CRC is at kRecordCrc).
inline constexpr size_t kSlotGeneration = 0;
inline constexpr size_t kSlotMagicAt = 8;
inline constexpr size_t kSlotVersionAt = 12;
inline constexpr size_t kSlotFlags = 14;
inline constexpr size_t kSlotActiveSegment = 16;
inline constexpr size_t kSlotCommitted = 24;
inline constexpr size_t kSlotHighWatermark = 32;
inline constexpr size_t kSlotLogStart = 40;
inline constexpr size_t kSlotCapacity = 48;

// Name of the segment file for a base offset: 20 decimal digits + ".seg".
std::string SegmentFileName(Offset base);
// Parses such a name; false if `name` is not one.
bool ParseSegmentFileName(const std::string& name, Offset* base);

struct SegmentHeader {
  uint32_t version = kSegmentVersion;
  TopicId topic{0};
  PartitionId partition{0};
  uint32_t flags = 0;
  Offset base_offset{0};
  uint64_t capacity = 0;
  TimestampMs created{0};
};
// Writes the 64 immutable bytes (magic .. CRC) of a header; `out` must hold kSegmentHeaderSize
// bytes and the rest of it is left as is.
void EncodeSegmentHeader(const SegmentHeader& h, std::byte* out);
// Checks magic, version, header size and CRC of the first kSegmentHeaderSize bytes of `file`.
Status DecodeSegmentHeader(std::span<const std::byte> file, SegmentHeader* out);

struct SealRecord {
  Position end{0};
  Offset next_offset{0};
  TimestampMs max_timestamp{0};
};
void EncodeSealRecord(const SealRecord& s, std::byte out[kRecordSize]);
// True when the 64 bytes hold a valid seal record (CRC matches, sealed flag set).
bool DecodeSealRecord(const std::byte in[kRecordSize], SealRecord* out);

// A log being cut back (TruncateTo): it ends at `end` of the segment holding the record, with
// `next_offset` the offset after its last record and `max_timestamp` the largest timestamp before
// `end` (i64 min if none).
struct TruncationRecord {
  Position end{0};
  Offset next_offset{0};
  TimestampMs max_timestamp{0};
};
void EncodeTruncationRecord(const TruncationRecord& t, std::byte out[kRecordSize]);
// True when the 64 bytes hold a valid truncation record (CRC matches, truncating flag set).
bool DecodeTruncationRecord(const std::byte in[kRecordSize], TruncationRecord* out);

struct Checkpoint {
  uint64_t sequence = 0;
  Position committed{0};
  Offset next_offset{0};
  TimestampMs max_timestamp{0};
};
void EncodeCheckpoint(const Checkpoint& c, std::byte out[kRecordSize]);
bool DecodeCheckpoint(const std::byte in[kRecordSize], Checkpoint* out);

struct PartitionSlot {
  uint64_t generation = 0;
  uint16_t flags = 0;
  Offset active_segment{0};
  Position committed_position{0};
  Offset high_watermark{0};
  Offset log_start_offset{0};
  uint64_t active_capacity = 0;
};
// Bit 63 of the generation word: set by the writer while it updates the slot (a seqlock). It
// leaves the low 32 bits alone, so futex sleepers on the word wake only for a finished update.
inline constexpr uint64_t kSlotBusyBit = 1ull << 63;

void EncodePartitionSlot(const PartitionSlot& s, std::byte out[kSlotSize]);
// kSlotBusy when the snapshot caught an update in progress (read again, after a pause);
// kCorruptHeader when its CRC fails (torn remote read: read again; persistent: corruption);
// kBadMagic / kBadVersion when it is not a version-1 slot.
Status DecodePartitionSlot(const std::byte in[kSlotSize], PartitionSlot* out);
// Reads a live slot (a local mapping of partition.slot), safe against a concurrent writer in
// another thread or process: a seqlock read, backing off (spin, then yield, then short sleeps)
// while an update is in progress, for at most `patience`. kSlotBusy when the writer stayed in
// the middle of an update that long (it is stopped or descheduled); kCorruptHeader when a stable
// snapshot fails its CRC.
Result<PartitionSlot> ReadPartitionSlot(const void* slot,
                                        std::chrono::nanoseconds patience = std::chrono::seconds(1));
// Publishes `s` into a live slot (single writer): sets the busy bit in the generation word,
// stores words 1..7, then stores the new generation with a release store.
void StorePartitionSlot(void* slot, const PartitionSlot& s);
// Waits a little before re-reading a slot found busy or torn; `attempt` counts from 0. Spins
// for the first attempts, then yields, then sleeps up to 100 us, so a descheduled writer gets
// the CPU back.
void SlotBackoff(int attempt);

}  // namespace rdmq::storage::format
