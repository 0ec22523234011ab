#include "rdmq/storage/record_batch.h"

#include <cstring>
#include <limits>
#include <string>

#include "layout_check.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/crc32c.h"

namespace rdmq::storage {

namespace bf = batch_field;
using coding::LoadBE;
using coding::StoreBE;

// The RecordBatch v2 header, row by row as docs/storage-format.md ("Record batches") gives it:
// (constant, documented offset, documented size).
static_assert(layout::Tiles({{bf::kBaseOffset, 0, 8},
                             {bf::kBatchLength, 8, 4},
                             {bf::kLeaderEpoch, 12, 4},
                             {bf::kMagic, 16, 1},
                             {bf::kCrc, 17, 4},
                             {bf::kAttributes, 21, 2},
                             {bf::kLastOffsetDelta, 23, 4},
                             {bf::kBaseTimestamp, 27, 8},
                             {bf::kMaxTimestamp, 35, 8},
                             {bf::kProducerId, 43, 8},
                             {bf::kProducerEpoch, 51, 2},
                             {bf::kBaseSequence, 53, 4},
                             {bf::kRecordCount, 57, 4}},
                            kBatchHeaderSize),
              "record batch header: docs/storage-format.md, \"Record batches\"");
// batchLength counts the bytes after itself.
static_assert(kBatchLengthOverhead == bf::kBatchLength + 4);

namespace {

// The most a thread keeps of its buffer for decompressed records between validations.
constexpr size_t kKeptScratchBytes = size_t{4} << 20;

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// Length of the zigzag varint of a signed value.
inline size_t ZLen(int64_t v) noexcept { return coding::VarintLengthSigned(v); }

inline size_t OptLen(const std::optional<std::string_view>& s) noexcept {
  return s ? ZLen(static_cast<int64_t>(s->size())) + s->size() : 1;
}

inline std::byte* PutOpt(std::byte* p, const std::optional<std::string_view>& s) noexcept {
  if (!s) return coding::PutVarintSigned(p, -1);
  p = coding::PutVarintSigned(p, static_cast<int64_t>(s->size()));
  if (!s->empty()) std::memcpy(p, s->data(), s->size());
  return p + s->size();
}

// Record body size (without the length prefix).
inline size_t BodySize(const RecordInput& r, int64_t ts_delta, int32_t offset_delta) noexcept {
  size_t n = 1 + ZLen(ts_delta) + ZLen(offset_delta) + OptLen(r.key) + OptLen(r.value) +
             ZLen(static_cast<int64_t>(r.headers.size()));
  for (const auto& h : r.headers) {
    n += ZLen(static_cast<int64_t>(h.key.size())) + h.key.size() + OptLen(h.value);
  }
  return n;
}

}  // namespace

Status DecodeBatchHeader(std::span<const std::byte> bytes, BatchHeader* out) {
  if (bytes.size() < kBatchHeaderSize) {
    return Status(StorageErrc::kMalformedBatch,
                  "batch header needs 61 bytes, only " + std::to_string(bytes.size()) + " available");
  }
  const std::byte* p = bytes.data();
  BatchHeader h;
  h.base_offset = Offset(LoadBE<int64_t>(p + bf::kBaseOffset));
  h.batch_length = LoadBE<int32_t>(p + bf::kBatchLength);
  h.leader_epoch = LoadBE<int32_t>(p + bf::kLeaderEpoch);
  h.magic = static_cast<int8_t>(p[bf::kMagic]);
  h.crc = LoadBE<uint32_t>(p + bf::kCrc);
  h.attributes = LoadBE<int16_t>(p + bf::kAttributes);
  h.last_offset_delta = LoadBE<int32_t>(p + bf::kLastOffsetDelta);
  h.base_timestamp = TimestampMs(LoadBE<int64_t>(p + bf::kBaseTimestamp));
  h.max_timestamp = TimestampMs(LoadBE<int64_t>(p + bf::kMaxTimestamp));
  h.producer_id = ProducerId(LoadBE<int64_t>(p + bf::kProducerId));
  h.producer_epoch = LoadBE<int16_t>(p + bf::kProducerEpoch);
  h.base_sequence = LoadBE<int32_t>(p + bf::kBaseSequence);
  h.record_count = LoadBE<int32_t>(p + bf::kRecordCount);

  if (h.magic != kBatchMagic) {
    return Status(StorageErrc::kMalformedBatch, "magic byte is " + std::to_string(h.magic) +
                                                    ", only RecordBatch v2 (magic 2) is supported");
  }
  if (h.batch_length < static_cast<int32_t>(kBatchHeaderSize - kBatchLengthOverhead)) {
    return Status(StorageErrc::kMalformedBatch, "batchLength " + std::to_string(h.batch_length) +
                                                    " is shorter than the 49 header bytes it must cover");
  }
  if (h.total_size() > kMaxBatchBytes) {
    return Status(StorageErrc::kMalformedBatch,
                  "batch of " + std::to_string(h.total_size()) + " bytes exceeds the 1 GiB limit");
  }
  if (h.total_size() > bytes.size()) {
    return Status(StorageErrc::kMalformedBatch, "batch of " + std::to_string(h.total_size()) +
                                                    " bytes runs past the end of the " +
                                                    std::to_string(bytes.size()) + " bytes available");
  }
  if (h.record_count < 0) {
    return Status(StorageErrc::kMalformedBatch, "negative record count " + std::to_string(h.record_count));
  }
  if (h.last_offset_delta < 0) {
    return Status(StorageErrc::kMalformedBatch,
                  "negative lastOffsetDelta " + std::to_string(h.last_offset_delta));
  }
  *out = h;
  return Status::Ok();
}

uint32_t ComputeBatchCrc(std::span<const std::byte> batch) noexcept {
  if (batch.size() <= bf::kAttributes) return 0;
  return crc32c::Value(batch.data() + bf::kAttributes, batch.size() - bf::kAttributes);
}

Status VerifyBatchCrc(const BatchHeader& h, std::span<const std::byte> batch) {
  const uint32_t crc = ComputeBatchCrc(batch.first(h.total_size()));
  if (crc != h.crc) {
    return Status(StorageErrc::kCorruptBatch, "record batch CRC mismatch: stored " + Hex32(h.crc) +
                                                  ", computed " + Hex32(crc) + " over " +
                                                  std::to_string(h.total_size()) + " bytes");
  }
  return Status::Ok();
}

Status ValidateBatch(std::span<const std::byte> bytes, Validation level, BatchHeader* out,
                     size_t max_decompressed) {
  BatchHeader h;
  RDMQ_RETURN_IF_ERROR(DecodeBatchHeader(bytes, &h));
  const auto batch = bytes.first(h.total_size());
  if (level != Validation::kHeader) RDMQ_RETURN_IF_ERROR(VerifyBatchCrc(h, batch));
  if (level == Validation::kRecords || (level == Validation::kCompressedRecords && h.is_compressed())) {
    // The decompressed records of a compressed batch, in a buffer each thread keeps for the
    // next one (a commit poller validates batch after batch) unless it grew large.
    thread_local std::string buffer;
    struct Trim {
      ~Trim() {
        if (buffer.capacity() > kKeptScratchBytes) std::string().swap(buffer);
      }
    } trim;
    RecordIterator it(h, batch, &buffer, max_decompressed);
    RecordView r;
    int64_t prev_delta = -1;
    while (it.Next(&r)) {
      if (r.offset_delta <= prev_delta || r.offset_delta > h.last_offset_delta) {
        return Status(StorageErrc::kMalformedBatch,
                      "record " + std::to_string(it.index() - 1) + " has offsetDelta " +
                          std::to_string(r.offset_delta) + " (previous " + std::to_string(prev_delta) +
                          ", lastOffsetDelta " + std::to_string(h.last_offset_delta) + ")");
      }
      prev_delta = r.offset_delta;
    }
    RDMQ_RETURN_IF_ERROR(it.status());
  }
  *out = h;
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// RecordIterator

RecordIterator::RecordIterator(const BatchHeader& header, std::span<const std::byte> batch)
    : RecordIterator(header, batch, nullptr) {}

RecordIterator::RecordIterator(const BatchHeader& header, std::span<const std::byte> batch,
                               std::string* buffer, size_t max_decompressed)
    : count_(header.record_count) {
  batch = batch.first(std::min(batch.size(), header.total_size()));
  if (batch.size() < kBatchHeaderSize) {
    status_ = Status(StorageErrc::kMalformedBatch, "batch shorter than its header");
  } else if (header.is_compressed() && buffer == nullptr) {
    status_ = Status(StorageErrc::kUnsupportedBatch,
                     "the batch is compressed (codec " + std::to_string(header.compression()) +
                         "); its records need a buffer to be decompressed into");
  } else if (header.is_compressed()) {
    auto records = BatchRecords(header, batch, buffer, max_decompressed);
    if (records.ok()) {
      records_ = *records;
      base_ = 0;
    } else {
      status_ = records.status();
    }
  } else {
    records_ = batch.subspan(kBatchHeaderSize);
  }
  if (!status_.ok()) count_ = 0;
}

Status RecordIterator::Fail(const std::string& what) {
  status_ = Status(StorageErrc::kMalformedBatch,
                   "record " + std::to_string(index_) + " at byte " + std::to_string(base_ + pos_) +
                       (base_ == 0 ? " of the decompressed records: " : ": ") + what);
  count_ = index_;
  return status_;
}

bool RecordIterator::Next(RecordView* out) {
  if (!status_.ok()) return false;
  if (index_ >= count_) {
    if (pos_ != records_.size()) {
      (void)Fail(std::to_string(records_.size() - pos_) + " bytes left over after the last of " +
                 std::to_string(count_) + " records");
    }
    return false;
  }
  coding::Reader len_reader(records_.data() + pos_, records_.size() - pos_);
  const int32_t len = len_reader.VarintSigned32();
  if (!len_reader.ok()) return (void)Fail("record length varint runs past the batch"), false;
  const size_t len_bytes = static_cast<size_t>(len_reader.here() - (records_.data() + pos_));
  if (len < 0 || static_cast<size_t>(len) > records_.size() - pos_ - len_bytes) {
    return (void)Fail("record length " + std::to_string(len) + " runs past the batch end"), false;
  }
  coding::Reader r(records_.data() + pos_ + len_bytes, static_cast<size_t>(len));
  RecordView v;
  v.attributes = static_cast<int8_t>(r.U8());
  v.timestamp_delta = r.VarintSigned64();
  v.offset_delta = r.VarintSigned32();
  const int32_t key_len = r.VarintSigned32();
  if (!r.ok()) return (void)Fail("record fields run past the record length"), false;
  if (key_len < -1) return (void)Fail("key length " + std::to_string(key_len)), false;
  if (key_len >= 0) {
    v.key = r.Bytes(static_cast<size_t>(key_len));
    if (!r.ok())
      return (void)Fail("key of " + std::to_string(key_len) + " bytes runs past the record"), false;
  }
  const int32_t value_len = r.VarintSigned32();
  if (!r.ok()) return (void)Fail("value length varint runs past the record"), false;
  if (value_len < -1) return (void)Fail("value length " + std::to_string(value_len)), false;
  if (value_len >= 0) {
    v.value = r.Bytes(static_cast<size_t>(value_len));
    if (!r.ok())
      return (void)Fail("value of " + std::to_string(value_len) + " bytes runs past the record"), false;
  }
  v.header_count = r.VarintSigned32();
  if (!r.ok()) return (void)Fail("header count varint runs past the record"), false;
  if (v.header_count < 0) return (void)Fail("header count " + std::to_string(v.header_count)), false;
  v.headers = std::span<const std::byte>(r.here(), r.remaining());
  // Check the headers now so that a record is either fully valid or reported.
  HeaderIterator hi(v.headers, v.header_count);
  HeaderView hv;
  while (hi.Next(&hv)) {
  }
  if (!hi.status().ok()) return (void)Fail(std::string(hi.status().context())), false;
  pos_ += len_bytes + static_cast<size_t>(len);
  ++index_;
  *out = v;
  return true;
}

// ---------------------------------------------------------------------------------------------
// HeaderIterator

HeaderIterator::HeaderIterator(std::span<const std::byte> headers, int32_t count)
    : bytes_(headers), left_(count) {}

bool HeaderIterator::Next(HeaderView* out) {
  if (!status_.ok()) return false;
  if (left_ <= 0) {
    if (pos_ != bytes_.size()) {
      status_ = Status(StorageErrc::kMalformedBatch,
                       std::to_string(bytes_.size() - pos_) + " bytes left over after the record headers");
    }
    return false;
  }
  coding::Reader r(bytes_.data() + pos_, bytes_.size() - pos_);
  const int32_t klen = r.VarintSigned32();
  if (!r.ok() || klen < 0) {
    status_ = Status(StorageErrc::kMalformedBatch, "header key length invalid or past the record end");
    return false;
  }
  HeaderView h;
  h.key = r.Bytes(static_cast<size_t>(klen));
  const int32_t vlen = r.VarintSigned32();
  if (!r.ok() || vlen < -1) {
    status_ = Status(StorageErrc::kMalformedBatch, "header key or value length runs past the record end");
    return false;
  }
  if (vlen >= 0) {
    h.value = r.Bytes(static_cast<size_t>(vlen));
    if (!r.ok()) {
      status_ = Status(StorageErrc::kMalformedBatch, "header value runs past the record end");
      return false;
    }
  }
  pos_ = static_cast<size_t>(r.here() - bytes_.data());
  --left_;
  *out = h;
  return true;
}

// ---------------------------------------------------------------------------------------------
// BatchScanner

bool BatchScanner::Next(BatchView* out) {
  if (!status_.ok() || pos_ >= bytes_.size()) return false;
  BatchHeader h;
  Status s = ValidateBatch(bytes_.subspan(pos_), level_, &h);
  if (!s.ok()) {
    status_ = s.WithContext("position " + std::to_string(base_ + pos_));
    return false;
  }
  out->header = h;
  out->bytes = bytes_.subspan(pos_, h.total_size());
  out->position = base_ + pos_;
  pos_ += h.total_size();
  return true;
}

// ---------------------------------------------------------------------------------------------
// Encoding

size_t EncodedRecordSize(const RecordInput& r, int64_t timestamp_delta, int32_t offset_delta) noexcept {
  const size_t body = BodySize(r, timestamp_delta, offset_delta);
  return ZLen(static_cast<int64_t>(body)) + body;
}

BatchBuilder::BatchBuilder(std::byte* buf, size_t capacity, const BatchOptions& options) noexcept
    : buf_(buf), cap_(std::min(capacity, kMaxBatchBytes)), options_(options) {}

bool BatchBuilder::Add(const RecordInput& r) noexcept {
  if (cap_ < kBatchHeaderSize || count_ == std::numeric_limits<int32_t>::max()) return false;
  if (count_ == 0) {
    base_ts_ = r.timestamp;
    max_ts_ = r.timestamp;
  }
  const int64_t ts_delta = r.timestamp - base_ts_;
  const size_t body = BodySize(r, ts_delta, count_);
  const size_t need = ZLen(static_cast<int64_t>(body)) + body;
  if (need > cap_ - pos_) return false;
  std::byte* p = buf_ + pos_;
  p = coding::PutVarintSigned(p, static_cast<int64_t>(body));
  *p++ = std::byte{0};  // record attributes (unused in v2)
  p = coding::PutVarintSigned(p, ts_delta);
  p = coding::PutVarintSigned(p, count_);
  p = PutOpt(p, r.key);
  p = PutOpt(p, r.value);
  p = coding::PutVarintSigned(p, static_cast<int64_t>(r.headers.size()));
  for (const auto& h : r.headers) {
    p = coding::PutVarintSigned(p, static_cast<int64_t>(h.key.size()));
    if (!h.key.empty()) std::memcpy(p, h.key.data(), h.key.size());
    p += h.key.size();
    p = PutOpt(p, h.value);
  }
  pos_ += need;
  if (r.timestamp > max_ts_) max_ts_ = r.timestamp;
  ++count_;
  return true;
}

size_t BatchBuilder::Finish() noexcept {
  if (count_ == 0) return 0;
  std::byte* p = buf_;
  StoreBE<int64_t>(p + bf::kBaseOffset, options_.base_offset.value());
  StoreBE<int32_t>(p + bf::kBatchLength, static_cast<int32_t>(pos_ - kBatchLengthOverhead));
  StoreBE<int32_t>(p + bf::kLeaderEpoch, options_.leader_epoch);
  p[bf::kMagic] = static_cast<std::byte>(kBatchMagic);
  // The records are plain: a codec is applied afterwards (CompressBatchInPlace).
  StoreBE<int16_t>(p + bf::kAttributes, static_cast<int16_t>(options_.attributes & ~kAttrCompressionMask));
  StoreBE<int32_t>(p + bf::kLastOffsetDelta, count_ - 1);
  StoreBE<int64_t>(p + bf::kBaseTimestamp, base_ts_.value());
  StoreBE<int64_t>(p + bf::kMaxTimestamp, max_ts_.value());
  StoreBE<int64_t>(p + bf::kProducerId, options_.producer_id.value());
  StoreBE<int16_t>(p + bf::kProducerEpoch, options_.producer_epoch);
  StoreBE<int32_t>(p + bf::kBaseSequence, options_.base_sequence);
  StoreBE<int32_t>(p + bf::kRecordCount, count_);
  StoreBE<uint32_t>(p + bf::kCrc, ComputeBatchCrc({p, pos_}));
  return pos_;
}

std::string EncodeBatch(const BatchOptions& options, std::span<const RecordInput> records) {
  size_t need = kBatchHeaderSize;
  if (!records.empty()) {
    const TimestampMs base = records[0].timestamp;
    for (size_t i = 0; i < records.size(); ++i) {
      need += EncodedRecordSize(records[i], records[i].timestamp - base, static_cast<int32_t>(i));
    }
  }
  std::string out(need, '\0');
  BatchBuilder b(reinterpret_cast<std::byte*>(out.data()), out.size(), options);
  for (const auto& r : records) {
    if (!b.Add(r)) return {};
  }
  out.resize(b.Finish());
  const int codec = options.attributes & kAttrCompressionMask;
  if (codec == 0 || out.empty()) return out;
  auto c = compression::CodecFromId(codec);
  if (!c.ok()) return {};
  auto compressed = CompressedBatch(coding::AsBytes(out), *c);
  return compressed.ok() ? std::move(*compressed) : std::string();
}

// ---------------------------------------------------------------------------------------------
// Filler batches

namespace {

constexpr size_t kMarkerKeySize = 4;    // version i16, type i16
constexpr size_t kMarkerValueSize = 6;  // version i16, coordinator epoch i32

// Encoded size (length prefix included) of an abort-marker control record whose value is
// `value_len` bytes (6 meaningful + zero padding) at the given deltas.
size_t MarkerBody(int64_t ts_delta, int32_t offset_delta, size_t value_len) {
  return 1 + ZLen(ts_delta) + ZLen(offset_delta) + ZLen(kMarkerKeySize) + kMarkerKeySize +
         ZLen(static_cast<int64_t>(value_len)) + value_len + ZLen(0);
}
size_t MarkerSize(int64_t ts_delta, int32_t offset_delta, size_t value_len) {
  const size_t body = MarkerBody(ts_delta, offset_delta, value_len);
  return ZLen(static_cast<int64_t>(body)) + body;
}

std::byte* PutMarker(std::byte* r, int64_t ts_delta, int32_t offset_delta, size_t value_len) {
  r = coding::PutVarintSigned(r, static_cast<int64_t>(MarkerBody(ts_delta, offset_delta, value_len)));
  *r++ = std::byte{0};
  r = coding::PutVarintSigned(r, ts_delta);
  r = coding::PutVarintSigned(r, offset_delta);
  r = coding::PutVarintSigned(r, kMarkerKeySize);
  StoreBE<int16_t>(r, 0);      // control record version
  StoreBE<int16_t>(r + 2, 0);  // type 0: abort marker
  r += kMarkerKeySize;
  r = coding::PutVarintSigned(r, static_cast<int64_t>(value_len));
  std::memset(r, 0, value_len);
  StoreBE<int16_t>(r, 0);                // marker value version
  StoreBE<int32_t>(r + 2, -1);           // coordinator epoch
  r += value_len;                        // zero padding after the 6 meaningful bytes
  return coding::PutVarintSigned(r, 0);  // no headers
}

// Finds (timestamp delta, value length) so that one marker record takes exactly `size` bytes.
// A record's length varint grows by one byte at some body sizes (64, 8192, ...), and the value's
// length varint likewise; a timestampDelta of 1, 2 or 3 varint bytes (0, 64, 8192) shifts the
// value's jumps. The length-prefix jump itself leaves holes no single record can hit (126 bytes
// of batch, for one); those take a second, minimal marker record.
bool SolveMarker(size_t size, int32_t offset_delta, int64_t* ts_delta, size_t* value_len) {
  static constexpr int64_t kTsDeltas[] = {0, 64, 8192};
  for (int64_t tsd : kTsDeltas) {
    const size_t smallest = MarkerSize(tsd, offset_delta, 0);
    if (size < smallest) continue;
    const size_t hi = size - smallest;
    const size_t lo = hi > 16 ? hi - 16 : 0;
    for (size_t v = std::max(lo, kMarkerValueSize); v <= hi; ++v) {
      if (MarkerSize(tsd, offset_delta, v) == size) {
        *ts_delta = tsd;
        *value_len = v;
        return true;
      }
    }
  }
  return false;
}

}  // namespace

// A short filler (68..77 bytes) has one control record too small for a whole marker: key null
// and value 0..3 zero bytes (68..71), or the 4-byte marker key and a value of 0..5 zero bytes
// (72..77). Kafka clients never parse the records of a control batch whose producer id is -1.
std::byte* PutShortFillerRecord(std::byte* r, size_t size) {
  const bool with_key = size >= 72;
  const size_t value_len = size - (with_key ? 72 : 68);
  const size_t body = 1 + 1 + 1 + (with_key ? 1 + kMarkerKeySize : 1) + (value_len ? 1 + value_len : 1) + 1;
  r = coding::PutVarintSigned(r, static_cast<int64_t>(body));
  *r++ = std::byte{0};
  r = coding::PutVarintSigned(r, 0);
  r = coding::PutVarintSigned(r, 0);
  if (with_key) {
    r = coding::PutVarintSigned(r, kMarkerKeySize);
    StoreBE<int16_t>(r, 0);
    StoreBE<int16_t>(r + 2, 0);
    r += kMarkerKeySize;
  } else {
    r = coding::PutVarintSigned(r, -1);
  }
  if (value_len) {
    r = coding::PutVarintSigned(r, static_cast<int64_t>(value_len));
    std::memset(r, 0, value_len);
    r += value_len;
  } else {
    r = coding::PutVarintSigned(r, -1);
  }
  return coding::PutVarintSigned(r, 0);
}

Status WriteFillerBatch(std::span<std::byte> out, Offset base_offset, TimestampMs timestamp) {
  const size_t size = out.size();
  if (size < kMinFillerBytes || size > kMaxBatchBytes) {
    return Status(StorageErrc::kMalformedBatch,
                  "a filler batch must be between 68 bytes and 1 GiB, not " + std::to_string(size));
  }
  int64_t tsd = 0;
  size_t v = 0;
  int records = 1;
  const size_t first_size = MarkerSize(0, 0, kMarkerValueSize);
  if (size < kMinMarkerFillerBytes) {
    records = 0;  // short filler
  } else if (!SolveMarker(size - kBatchHeaderSize, 0, &tsd, &v)) {
    records = 2;
    if (size - kBatchHeaderSize < first_size ||
        !SolveMarker(size - kBatchHeaderSize - first_size, 1, &tsd, &v)) {
      return Status(StorageErrc::kMalformedBatch,
                    "no filler encoding of exactly " + std::to_string(size) + " bytes");
    }
  }
  std::byte* p = out.data();
  std::byte* r = p + kBatchHeaderSize;
  // The records' timestamps (base + delta) and the batch's max timestamp are all `timestamp`.
  const int64_t base_ts = timestamp.value() - tsd;
  if (records == 0) {
    r = PutShortFillerRecord(r, size);
    records = 1;
  } else {
    if (records == 2) r = PutMarker(r, tsd, 0, kMarkerValueSize);
    r = PutMarker(r, tsd, records - 1, v);
  }
  if (static_cast<size_t>(r - p) != size) {
    return Status(Errc::kInternal, "filler encoding came out at " + std::to_string(r - p) + " bytes, not " +
                                       std::to_string(size));
  }
  StoreBE<int64_t>(p + bf::kBaseOffset, base_offset.value());
  StoreBE<int32_t>(p + bf::kBatchLength, static_cast<int32_t>(size - kBatchLengthOverhead));
  StoreBE<int32_t>(p + bf::kLeaderEpoch, -1);
  p[bf::kMagic] = static_cast<std::byte>(kBatchMagic);
  StoreBE<int16_t>(p + bf::kAttributes, kAttrTransactional | kAttrControl);
  StoreBE<int32_t>(p + bf::kLastOffsetDelta, records - 1);
  StoreBE<int64_t>(p + bf::kBaseTimestamp, base_ts);
  StoreBE<int64_t>(p + bf::kMaxTimestamp, timestamp.value());
  StoreBE<int64_t>(p + bf::kProducerId, -1);
  StoreBE<int16_t>(p + bf::kProducerEpoch, -1);
  StoreBE<int32_t>(p + bf::kBaseSequence, -1);
  StoreBE<int32_t>(p + bf::kRecordCount, records);
  StoreBE<uint32_t>(p + bf::kCrc, ComputeBatchCrc({p, size}));
  return Status::Ok();
}

bool IsFillerBatch(const BatchHeader& h) noexcept {
  return h.is_control() && h.producer_id == kNoProducerId && h.record_count >= 1 && h.record_count <= 2 &&
         h.last_offset_delta == h.record_count - 1;
}

void PatchBaseOffset(std::byte* batch, Offset offset) noexcept {
  StoreBE<int64_t>(batch + bf::kBaseOffset, offset.value());
}

void PatchLeaderEpoch(std::byte* batch, int32_t epoch) noexcept {
  StoreBE<int32_t>(batch + bf::kLeaderEpoch, epoch);
}

void PatchProducerState(std::span<std::byte> batch, int16_t producer_epoch, int32_t base_sequence) noexcept {
  if (batch.size() < kBatchHeaderSize) return;
  std::byte* p = batch.data();
  StoreBE<int16_t>(p + bf::kProducerEpoch, producer_epoch);
  StoreBE<int32_t>(p + bf::kBaseSequence, base_sequence);
  StoreBE<uint32_t>(p + bf::kCrc, ComputeBatchCrc(batch));
}

}  // namespace rdmq::storage
