// Kafka RecordBatch v2: the unit rdmq stores, sends and reads. The byte layout is specified in
// docs/storage-format.md ("Record batches"); in short: a 61-byte big-endian header
//
//   0 baseOffset i64 | 8 batchLength i32 | 12 partitionLeaderEpoch i32 | 16 magic i8 (=2) |
//   17 crc u32 | 21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64 |
//   35 maxTimestamp i64 | 43 producerId i64 | 51 producerEpoch i16 | 53 baseSequence i32 |
//   57 recordCount i32
//
// followed by `recordCount` records (compressed as one block when attributes bits 0-2 name a
// codec: 1 gzip, 2 snappy, 3 lz4, 4 zstd; see rdmq/compression/codec.h), each a zigzag-varint
// length and then attributes (i8),
// timestampDelta (varlong), offsetDelta (varint), key (varint length, -1 = null, bytes), value
// (likewise), header count (varint) and headers (key: varint length + bytes; value: varint length,
// -1 = null, + bytes). The CRC-32C covers bytes [21, end): not baseOffset, which the storage node
// patches in place when it assigns offsets to shared-mode batches written with baseOffset = -1.
//
// This header offers:
//   * BatchBuilder: encodes records straight into caller memory (e.g. a mapped segment); no
//     allocation.
//   * DecodeBatchHeader / VerifyBatchCrc / ValidateBatch: zero-copy, exhaustively bounds-checked
//     decoding of untrusted bytes (remote peers, media after a crash).
//   * RecordIterator / HeaderIterator: walk the records of a batch, without copying when it is
//     uncompressed; a compressed batch's records are decompressed into a caller-owned buffer.
//   * BatchScanner: walk the batches laid back to back in a byte range.
//   * CompressedBatch / CompressBatchInPlace: compress the records of a finished batch.
//   * WriteFillerBatch: a control batch (Kafka's abort-marker shape) of an exact length, used to
//     fill holes left by expired shared-mode reservations.
//
// Threading: everything here is a pure function of its inputs or an object used by one thread.
// Errors: StorageErrc::kMalformedBatch (bounds, lengths, magic, compressed records that do not
// decompress within kMaxDecompressedBatchBytes), kCorruptBatch (CRC mismatch), kUnsupportedBatch
// (an unknown codec id, or a compressed batch given to a reader without a buffer); the context
// names the offending field and byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "rdmq/common/status.h"
#include "rdmq/common/types.h"
#include "rdmq/compression/codec.h"
#include "rdmq/storage/errors.h"

namespace rdmq::storage {

// Byte offsets of the fields of a RecordBatch v2 header.
namespace batch_field {
inline constexpr size_t kBaseOffset = 0;        // i64
inline constexpr size_t kBatchLength = 8;       // i32: bytes that follow this field
inline constexpr size_t kLeaderEpoch = 12;      // i32
inline constexpr size_t kMagic = 16;            // i8
inline constexpr size_t kCrc = 17;              // u32
inline constexpr size_t kAttributes = 21;       // i16
inline constexpr size_t kLastOffsetDelta = 23;  // i32
inline constexpr size_t kBaseTimestamp = 27;    // i64
inline constexpr size_t kMaxTimestamp = 35;     // i64
inline constexpr size_t kProducerId = 43;       // i64
inline constexpr size_t kProducerEpoch = 51;    // i16
inline constexpr size_t kBaseSequence = 53;     // i32
inline constexpr size_t kRecordCount = 57;      // i32
}  // namespace batch_field

inline constexpr size_t kBatchHeaderSize = 61;
// batchLength counts the bytes after itself: total size = batchLength + 12.
inline constexpr size_t kBatchLengthOverhead = 12;
inline constexpr int8_t kBatchMagic = 2;
// Largest batch rdmq accepts (Kafka's own limit is the i32 length field).
inline constexpr size_t kMaxBatchBytes = size_t{1} << 30;
// Most bytes the records of one compressed batch may decompress to: the largest
// max.message.bytes a topic may have, so every batch rdmq's producer compresses (at most
// max.message.bytes before compression) fits. A batch whose records decompress to more is refused
// as malformed: the bound on what a decompression bomb makes a reader allocate.
inline constexpr size_t kMaxDecompressedBatchBytes = size_t{64} << 20;

// Attribute bits.
inline constexpr int16_t kAttrCompressionMask = 0x07;
inline constexpr int16_t kAttrLogAppendTime = 0x08;
inline constexpr int16_t kAttrTransactional = 0x10;
inline constexpr int16_t kAttrControl = 0x20;

// A decoded batch header (host byte order).
struct BatchHeader {
  Offset base_offset{kNoOffset};
  int32_t batch_length = 0;
  int32_t leader_epoch = -1;
  int8_t magic = kBatchMagic;
  uint32_t crc = 0;
  int16_t attributes = 0;
  int32_t last_offset_delta = 0;
  TimestampMs base_timestamp{0};
  TimestampMs max_timestamp{0};
  ProducerId producer_id{kNoProducerId};
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  int32_t record_count = 0;

  size_t total_size() const noexcept { return kBatchLengthOverhead + static_cast<size_t>(batch_length); }
  // Number of offsets the batch occupies.
  int64_t offset_count() const noexcept { return int64_t{last_offset_delta} + 1; }
  Offset last_offset() const noexcept { return base_offset + last_offset_delta; }
  Offset next_offset() const noexcept { return base_offset + offset_count(); }
  bool is_control() const noexcept { return (attributes & kAttrControl) != 0; }
  bool is_transactional() const noexcept { return (attributes & kAttrTransactional) != 0; }
  int compression() const noexcept { return attributes & kAttrCompressionMask; }
  bool is_compressed() const noexcept { return compression() != 0; }
};

// Decodes and checks the 61-byte header at the start of `bytes`: the header fits, magic is 2, the
// batch length covers at least the header, fits in `bytes` and is at most kMaxBatchBytes, the
// record count is not negative, and lastOffsetDelta is not negative. Does not check the CRC.
Status DecodeBatchHeader(std::span<const std::byte> bytes, BatchHeader* out);

// CRC-32C over bytes [21, end) of a complete batch (its size comes from the caller).
uint32_t ComputeBatchCrc(std::span<const std::byte> batch) noexcept;

// Checks the stored CRC of a complete batch whose header is `h`. kCorruptBatch on mismatch.
Status VerifyBatchCrc(const BatchHeader& h, std::span<const std::byte> batch);

enum class Validation {
  kHeader,  // header fields only
  kCrc,     // header + CRC (what readers and recovery do)
  // kCrc, and for a compressed batch kRecords' checks of its decompressed records (what commits
  // and AppendBatch do: the log stores compressed batches as given, so it checks them once)
  kCompressedRecords,
  // header + CRC + every record parses (decompressed first when compressed), the record count
  // matches and offsetDeltas increase up to at most lastOffsetDelta (what tools do)
  kRecords,
};
// DecodeBatchHeader, then the checks selected by `level`. `bytes` may extend past the batch.
// Decompression (kCompressedRecords, kRecords) uses a temporary buffer of at most
// `max_decompressed` bytes.
Status ValidateBatch(std::span<const std::byte> bytes, Validation level, BatchHeader* out,
                     size_t max_decompressed = kMaxDecompressedBatchBytes);

// The records of the complete batch `batch` whose header is `h`: the bytes after the header of
// an uncompressed batch (in place, `*buffer` untouched), or a compressed batch's records
// decompressed into `*buffer` (at most max_decompressed bytes). kUnsupportedBatch for an
// unknown codec; kMalformedBatch, naming the codec and the library's complaint or the limit, when
// they do not decompress.
Result<std::span<const std::byte>> BatchRecords(const BatchHeader& h, std::span<const std::byte> batch,
                                                std::string* buffer,
                                                size_t max_decompressed = kMaxDecompressedBatchBytes);

// Views into a record inside a batch. Spans point into the batch; they live as long as it does.
struct RecordView {
  int8_t attributes = 0;
  int64_t timestamp_delta = 0;
  int32_t offset_delta = 0;
  std::optional<std::span<const std::byte>> key;    // nullopt = null key
  std::optional<std::span<const std::byte>> value;  // nullopt = null value
  int32_t header_count = 0;
  std::span<const std::byte> headers;  // the encoded headers, for HeaderIterator
};

struct HeaderView {
  std::span<const std::byte> key;
  std::optional<std::span<const std::byte>> value;
};

// Walks the records of one batch. Usage:
//   std::string buffer;                          // only used by compressed batches
//   RecordIterator it(header, batch_bytes, &buffer);
//   RecordView r;
//   while (it.Next(&r)) { ... }
//   RDMQ_RETURN_IF_ERROR(it.status());
// An uncompressed batch is walked in place (zero copy; the views point into `batch`). A
// compressed batch's records are decompressed into `*buffer` by the constructor (BatchRecords)
// and the views point into it: they live until the buffer changes. Without a buffer a
// compressed batch is kUnsupportedBatch. Next() returns false at the end or on the first
// malformed record (then status() says which record and byte, or why decompression failed).
// After the last record it also checks that the records exactly fill the batch (or the
// decompressed records).
class RecordIterator {
 public:
  RecordIterator(const BatchHeader& header, std::span<const std::byte> batch);
  RecordIterator(const BatchHeader& header, std::span<const std::byte> batch, std::string* buffer,
                 size_t max_decompressed = kMaxDecompressedBatchBytes);
  bool Next(RecordView* out);
  const Status& status() const noexcept { return status_; }
  int32_t index() const noexcept { return index_; }

 private:
  Status Fail(const std::string& what);
  std::span<const std::byte> records_;  // the records: in the batch, or decompressed
  size_t base_ = kBatchHeaderSize;      // byte of records_[0] in the batch (0: decompressed)
  size_t pos_ = 0;
  int32_t count_ = 0;
  int32_t index_ = 0;
  Status status_;
};

// Walks the headers of one record (RecordView::headers, RecordView::header_count).
class HeaderIterator {
 public:
  HeaderIterator(std::span<const std::byte> headers, int32_t count);
  bool Next(HeaderView* out);
  const Status& status() const noexcept { return status_; }

 private:
  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
  int32_t left_ = 0;
  Status status_;
};

// Walks batches laid back to back in `bytes` (e.g. what a consumer READ from a segment).
// Next() returns false at the end of the range or on the first invalid batch (status() then says
// what and at which position, counting from `base_position`).
struct BatchView {
  BatchHeader header;
  std::span<const std::byte> bytes;  // exactly header.total_size() bytes
  uint64_t position = 0;             // base_position + offset within the range
};
class BatchScanner {
 public:
  explicit BatchScanner(std::span<const std::byte> bytes, Validation level = Validation::kCrc,
                        uint64_t base_position = 0)
      : bytes_(bytes), level_(level), base_(base_position) {}
  bool Next(BatchView* out);
  const Status& status() const noexcept { return status_; }
  // Bytes consumed by the batches returned so far.
  size_t consumed() const noexcept { return pos_; }

 private:
  std::span<const std::byte> bytes_;
  Validation level_;
  uint64_t base_;
  size_t pos_ = 0;
  Status status_;
};

// Input for the encoder.
struct HeaderInput {
  std::string_view key;
  std::optional<std::string_view> value;
};
struct RecordInput {
  std::optional<std::string_view> key;    // nullopt = null key
  std::optional<std::string_view> value;  // nullopt = null value
  std::span<const HeaderInput> headers;
  TimestampMs timestamp{0};
};

struct BatchOptions {
  Offset base_offset{kNoOffset};  // -1: the storage node assigns (shared mode)
  // BatchBuilder writes plain records and clears the codec bits (0-2); EncodeBatch and
  // PartitionLog::Append compress the records with the codec they name.
  int16_t attributes = 0;
  int32_t leader_epoch = -1;
  ProducerId producer_id{kNoProducerId};
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
};

// Encoded size of one record (length prefix included) at the given deltas.
size_t EncodedRecordSize(const RecordInput& r, int64_t timestamp_delta, int32_t offset_delta) noexcept;

// Encodes one batch into [buf, buf + capacity). The first record's timestamp becomes the base
// timestamp. Add() returns false, writing nothing, when the record does not fit in what is left
// (or the batch would exceed kMaxBatchBytes); Finish() writes the header and CRC and returns the
// batch size (0 if no record was added). Not thread-safe; the memory must stay valid until
// Finish(). No allocation.
class BatchBuilder {
 public:
  BatchBuilder(std::byte* buf, size_t capacity, const BatchOptions& options) noexcept;
  bool Add(const RecordInput& r) noexcept;
  size_t Finish() noexcept;
  int32_t count() const noexcept { return count_; }
  // The producer epoch and base sequence Finish writes (an idempotent producer renumbering).
  void SetProducerState(int16_t producer_epoch, int32_t base_sequence) noexcept {
    options_.producer_epoch = producer_epoch;
    options_.base_sequence = base_sequence;
  }
  size_t size() const noexcept { return pos_; }
  TimestampMs max_timestamp() const noexcept { return max_ts_; }

 private:
  std::byte* buf_;
  size_t cap_;
  BatchOptions options_;
  size_t pos_ = kBatchHeaderSize;
  int32_t count_ = 0;
  TimestampMs base_ts_{0};
  TimestampMs max_ts_{0};
};

// Encodes `records` (at least one) as one batch into a new string, its records compressed with
// the codec named by options.attributes bits 0-2 (even when that does not make it smaller). For
// tests and tools; empty on failure.
std::string EncodeBatch(const BatchOptions& options, std::span<const RecordInput> records);

// The complete, uncompressed, CRC-valid batch `batch` with its records compressed by `codec`:
// the same header but for the codec bits, batchLength and CRC. kInvalidArgument for a batch that
// is already compressed, a codec of kNone or a bad level; the codec's errors.
Result<std::string> CompressedBatch(std::span<const std::byte> batch, compression::Codec codec,
                                    int level = compression::kDefaultLevel);
// The same in place, when it makes the batch smaller: the compressed records overwrite the plain
// ones in `batch` (the bytes after the new end are left as they were) and the new size is
// returned. Returns batch.size(), the batch untouched, when compression would not shrink it.
Result<size_t> CompressBatchInPlace(std::span<std::byte> batch, compression::Codec codec,
                                    int level = compression::kDefaultLevel);

// Filler batches: a control batch (attributes: transactional | control), producer id -1,
// occupying exactly out.size() bytes. From kMinMarkerFillerBytes on, its records are shaped as
// Kafka's abort marker (key: version 0, type 0; value: version 0, coordinator epoch -1, then zero
// padding): one record, so one offset, except at the few sizes one record cannot take (126, 8255,
// ... bytes: where the record length varint grows) where a second minimal marker makes it two.
// Below that (68..77 bytes, the sizes of the smallest real batches) the one record is too short
// for a whole marker (null or 4-byte key, 0..5 zero value bytes). Kafka clients skip control
// batches without a producer id unparsed. kMinFillerBytes <= size <= kMaxBatchBytes; 68 is also
// the size of the smallest possible batch (one record with null key and value).
inline constexpr size_t kMinFillerBytes = 68;
inline constexpr size_t kMinMarkerFillerBytes = 78;
Status WriteFillerBatch(std::span<std::byte> out, Offset base_offset, TimestampMs timestamp);
// True if the batch looks like a filler (control batch, producer id -1, one or two records).
bool IsFillerBatch(const BatchHeader& h) noexcept;

// Writes `offset` into the baseOffset field of the batch at `batch` (the CRC does not cover it).
void PatchBaseOffset(std::byte* batch, Offset offset) noexcept;
// Writes `epoch` into the partitionLeaderEpoch field of the batch at `batch` (nor this one).
void PatchLeaderEpoch(std::byte* batch, int32_t epoch) noexcept;
// Rewrites the producer epoch and base sequence of the whole batch `batch` (an idempotent
// producer that bumped its epoch renumbers what it has not sent yet) and its CRC.
void PatchProducerState(std::span<std::byte> batch, int16_t producer_epoch, int32_t base_sequence) noexcept;

}  // namespace rdmq::storage
