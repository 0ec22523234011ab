// Compressed record batches in the storage: validation that decompresses and walks the records,
// iteration through a caller's buffer, in-place compression, and the log storing and serving
// compressed batches exactly as given (appends and exclusive and shared commits), refusing
// corrupt ones, mismatched counts and decompression bombs with nothing stored.
#include <cstring>
#include <string>
#include <vector>

#include "rdmq/common/coding.h"
#include "rdmq/common/crc32c.h"
#include "rdmq/storage/log.h"
#include "storage_test_util.h"

using namespace rdmq;
using namespace rdmq::storage;
using compression::Codec;
using rdmq::storage::test::ReadAll;

namespace {

constexpr Codec kCodecs[] = {Codec::kGzip, Codec::kSnappy, Codec::kLz4, Codec::kZstd};

std::span<const std::byte> Bytes(const std::string& s) { return coding::AsBytes(s); }

// `n` records with keys, compressible values, a header and timestamps, all from `first` on.
struct Records {
  std::vector<std::string> keys, values;
  std::vector<HeaderInput> headers;
  std::vector<RecordInput> in;
  Records(int n, int first = 0) {
    for (int i = 0; i < n; ++i) {
      keys.push_back("key-" + std::to_string(first + i));
      values.push_back("value " + std::to_string(first + i) + ": " +
                       std::string(200, 'a' + (first + i) % 26));
    }
    headers.push_back({"trace", std::string_view("abc")});
    for (int i = 0; i < n; ++i) {
      RecordInput r;
      r.key = std::string_view(keys[i]);
      r.value = std::string_view(values[i]);
      r.headers = headers;
      r.timestamp = TimestampMs(1000 + 10 * (first + i));
      in.push_back(r);
    }
  }
};

std::string Batch(const Records& r, Offset base, Codec codec) {
  BatchOptions o;
  o.base_offset = base;
  o.attributes = static_cast<int16_t>(codec);
  std::string b = EncodeBatch(o, r.in);
  REQUIRE(!b.empty());
  return b;
}

void Resign(std::string* b) {
  coding::StoreBE<uint32_t>(b->data() + batch_field::kCrc, crc32c::Value(b->data() + 21, b->size() - 21));
}

// `batch`'s header with `payload` as its records, codec id `codec`, the given record count and
// lastOffsetDelta, lengths and CRC made consistent.
std::string WithPayload(const std::string& batch, int codec, std::string_view payload, int32_t count,
                        int32_t last_delta) {
  std::string b = batch.substr(0, kBatchHeaderSize) + std::string(payload);
  coding::StoreBE<int32_t>(b.data() + batch_field::kBatchLength, static_cast<int32_t>(b.size() - 12));
  coding::StoreBE<int16_t>(b.data() + batch_field::kAttributes, static_cast<int16_t>(codec));
  coding::StoreBE<int32_t>(b.data() + batch_field::kRecordCount, count);
  coding::StoreBE<int32_t>(b.data() + batch_field::kLastOffsetDelta, last_delta);
  Resign(&b);
  return b;
}

std::string Compressed(Codec c, std::string_view plain) {
  auto z = compression::Compress(c, coding::AsBytes(plain));
  REQUIRE_OK(z);
  return *z;
}

struct Seen {
  int32_t offset_delta;
  int64_t timestamp_delta;
  std::optional<std::string> key, value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  bool operator==(const Seen&) const = default;
};

std::vector<Seen> Walk(const std::string& batch) {
  BatchHeader h;
  REQUIRE_OK(ValidateBatch(Bytes(batch), Validation::kRecords, &h));
  std::string buffer;
  RecordIterator it(h, Bytes(batch), &buffer);
  std::vector<Seen> out;
  RecordView r;
  while (it.Next(&r)) {
    Seen s{r.offset_delta, r.timestamp_delta, std::nullopt, std::nullopt, {}};
    if (r.key) s.key = std::string(coding::AsChars(*r.key));
    if (r.value) s.value = std::string(coding::AsChars(*r.value));
    HeaderIterator hi(r.headers, r.header_count);
    HeaderView hv;
    while (hi.Next(&hv)) {
      std::optional<std::string> v;
      if (hv.value) v = std::string(coding::AsChars(*hv.value));
      s.headers.emplace_back(std::string(coding::AsChars(hv.key)), v);
    }
    out.push_back(std::move(s));
  }
  REQUIRE_OK(it.status());
  return out;
}

LogOptions Opts() {
  LogOptions o;
  o.segment_bytes = 256 << 10;
  o.topic = TopicId(1);
  o.partition = PartitionId(0);
  return o;
}

std::unique_ptr<PartitionLog> OpenOk(Env* env) {
  auto log = PartitionLog::Open(env, "/p", Opts());
  REQUIRE_OK(log.status());
  return std::move(*log);
}

// A refused batch left the log as it was.
void CheckNothingStored(const PartitionLog& log, Offset hwm, Position committed) {
  CHECK(log.HighWatermark() == hwm);
  CHECK(log.ActiveSegment().committed == committed);
}

}  // namespace

TEST_CASE("compressed batches validate and iterate like plain ones, for every codec",
          "[batch][compression]") {
  const Records recs(20);
  const std::string plain = Batch(recs, Offset(0), Codec::kNone);
  const auto want = Walk(plain);
  REQUIRE(want.size() == 20);
  for (Codec c : kCodecs) {
    INFO(compression::CodecName(c));
    const std::string z = Batch(recs, Offset(0), c);
    BatchHeader h;
    REQUIRE_OK(ValidateBatch(Bytes(z), Validation::kCompressedRecords, &h));
    CHECK(h.compression() == static_cast<int>(c));
    CHECK(h.record_count == 20);
    CHECK(z.size() < plain.size() / 2);
    // The header is the plain batch's but for attributes, length and CRC.
    CHECK(z.substr(0, 8) == plain.substr(0, 8));
    CHECK(z.substr(23, kBatchHeaderSize - 23) == plain.substr(23, kBatchHeaderSize - 23));
    CHECK(Walk(z) == want);
    // Without a buffer a compressed batch cannot be walked.
    RecordIterator bare(h, Bytes(z));
    RecordView r;
    CHECK_FALSE(bare.Next(&r));
    CHECK(bare.status().is(StorageErrc::kUnsupportedBatch));
    // A scanner over plain and compressed batches back to back.
    const std::string both = plain + z;
    BatchScanner sc(Bytes(both), Validation::kRecords);
    BatchView v;
    int n = 0;
    while (sc.Next(&v)) ++n;
    REQUIRE_OK(sc.status());
    CHECK(n == 2);
  }
}

TEST_CASE("CompressBatchInPlace shrinks a batch or leaves it untouched", "[batch][compression]") {
  const Records recs(10);
  for (Codec c : kCodecs) {
    INFO(compression::CodecName(c));
    std::string b = Batch(recs, Offset(5), Codec::kNone);
    const std::string before = b;
    auto expect = CompressedBatch(Bytes(before), c);
    REQUIRE_OK(expect);
    auto n = CompressBatchInPlace({reinterpret_cast<std::byte*>(b.data()), b.size()}, c);
    REQUIRE_OK(n);
    REQUIRE(*n == expect->size());
    CHECK(b.substr(0, *n) == *expect);
    CHECK(Walk(b.substr(0, *n)) == Walk(before));
    // Already compressed; codec none.
    std::string again = *expect;
    CHECK(CompressBatchInPlace({reinterpret_cast<std::byte*>(again.data()), again.size()}, c)
              .status()
              .is(Errc::kInvalidArgument));
  }
  // One short record that no codec makes smaller: kept as it was.
  RecordInput r;
  r.value = std::string_view("x9");
  std::string tiny = EncodeBatch({}, std::span(&r, 1));
  const std::string tiny_before = tiny;
  for (Codec c : kCodecs) {
    auto n = CompressBatchInPlace({reinterpret_cast<std::byte*>(tiny.data()), tiny.size()}, c);
    REQUIRE_OK(n);
    CHECK(*n == tiny.size());
    CHECK(tiny == tiny_before);
  }
  CHECK(CompressBatchInPlace({reinterpret_cast<std::byte*>(tiny.data()), tiny.size()}, Codec::kNone)
            .status()
            .is(Errc::kInvalidArgument));
  tiny.back() ^= 1;  // the CRC no longer holds
  CHECK(CompressBatchInPlace({reinterpret_cast<std::byte*>(tiny.data()), tiny.size()}, Codec::kLz4)
            .status()
            .is(StorageErrc::kCorruptBatch));
}

TEST_CASE("the log stores compressed batches as given and serves them unchanged", "[log][compression]") {
  MemEnv env;
  auto log = OpenOk(&env);
  std::vector<std::string> stored;  // every batch as the log must hold it
  int next = 0;
  // AppendBatch: one batch per codec.
  for (Codec c : kCodecs) {
    std::string z = Batch(Records(8, next), Offset(999), c);
    auto r = log->AppendBatch(Bytes(z));
    REQUIRE_OK(r);
    CHECK(r->base_offset == Offset(next));
    PatchBaseOffset(reinterpret_cast<std::byte*>(z.data()), Offset(next));
    stored.push_back(z);
    next += 8;
  }
  // Exclusive commit of remotely written compressed batches.
  {
    auto seg = log->ActiveSegment();
    const std::string a = Batch(Records(5, next), Offset(next), Codec::kZstd);
    const std::string b = Batch(Records(3, next + 5), Offset(next + 5), Codec::kSnappy);
    std::memcpy(seg.data() + seg.committed.value(), a.data(), a.size());
    std::memcpy(seg.data() + seg.committed.value() + a.size(), b.data(), b.size());
    auto c = log->Commit(
        {CommitMode::kExclusive, seg.base_offset, seg.committed, a.size() + b.size(), Offset(next + 8)});
    REQUIRE_OK(c);
    stored.push_back(a);
    stored.push_back(b);
    next += 8;
  }
  // Shared commit: baseOffset -1, assigned by the log.
  {
    std::string z = Batch(Records(4, next), kNoOffset, Codec::kLz4);
    auto res = log->Reserve(z.size());
    REQUIRE_OK(res);
    std::memcpy(log->ActiveSegment().data() + res->position.value(), z.data(), z.size());
    auto c = log->Commit({CommitMode::kShared, res->segment, res->position, z.size(), kNoOffset});
    REQUIRE_OK(c);
    CHECK(c->base_offset == Offset(next));
    PatchBaseOffset(reinterpret_cast<std::byte*>(z.data()), Offset(next));
    stored.push_back(z);
    next += 4;
  }
  // Append compresses when asked to.
  {
    const Records recs(6, next);
    BatchOptions o;
    o.attributes = static_cast<int16_t>(Codec::kGzip);
    auto r = log->Append(recs.in, o);
    REQUIRE_OK(r);
    std::string want = Batch(recs, Offset(next), Codec::kGzip);
    CHECK(r->bytes == want.size());
    stored.push_back(want);
    next += 6;
  }
  CHECK(log->HighWatermark() == Offset(next));

  // Read returns the bytes exactly as stored.
  std::string all_stored;
  for (const auto& s : stored) all_stored += s;
  auto rd = log->Read(Offset(0), 1 << 20);
  REQUIRE_OK(rd);
  CHECK(std::string(coding::AsChars(rd->bytes)) == all_stored);

  // And the records come back with their offsets, keys, values and timestamps.
  auto check_records = [&](const PartitionLog& l) {
    const auto recs = ReadAll(l);
    REQUIRE(static_cast<int>(recs.size()) == next);
    const Records want(next);
    for (int i = 0; i < next; ++i) {
      CHECK(recs[i].offset == i);
      CHECK(recs[i].key == want.keys[i]);
      CHECK(recs[i].value == want.values[i]);
      CHECK(recs[i].timestamp == 1000 + 10 * i);
    }
  };
  check_records(*log);
  // OffsetForTimestamp looks inside compressed batches.
  auto off = log->OffsetForTimestamp(TimestampMs(1000 + 10 * 13 - 5));
  REQUIRE_OK(off);
  CHECK(*off == Offset(13));
  // Recovery after a reopen keeps them.
  REQUIRE_OK(log->Close());
  log.reset();
  auto again = OpenOk(&env);
  check_records(*again);
}

TEST_CASE("corrupt compressed records are refused with a clear error and nothing stored",
          "[log][compression]") {
  MemEnv env;
  auto log = OpenOk(&env);
  REQUIRE_OK(log->AppendBatch(Bytes(Batch(Records(2), Offset(0), Codec::kNone))));
  const Offset hwm = log->HighWatermark();
  const Position committed = log->ActiveSegment().committed;
  for (Codec c : kCodecs) {
    INFO(compression::CodecName(c));
    const std::string good = Batch(Records(10), Offset(2), c);
    const std::string payload = good.substr(kBatchHeaderSize);
    const std::string bad[] = {
        WithPayload(good, static_cast<int>(c), payload.substr(0, payload.size() - 5), 10, 9),  // truncated
        WithPayload(good, static_cast<int>(c), std::string(40, '\xff'), 10, 9),                // garbage
    };
    for (const auto& b : bad) {
      const Status s = log->AppendBatch(Bytes(b)).status();
      INFO(s.ToString());
      CHECK(s.is(StorageErrc::kMalformedBatch));
      CHECK(s.ToString().find("do not decompress") != std::string::npos);
      CHECK(s.ToString().find(std::string(compression::CodecName(c)) + ":") != std::string::npos);
      CheckNothingStored(*log, hwm, committed);
      // The same through a commit.
      auto seg = log->ActiveSegment();
      std::memcpy(seg.data() + seg.committed.value(), b.data(), b.size());
      const Status cs =
          log->Commit({CommitMode::kExclusive, seg.base_offset, seg.committed, b.size(), kNoOffset}).status();
      CHECK(cs.is(StorageErrc::kMalformedBatch));
      CHECK(cs.ToString().find("segment 00000000000000000000.seg position") != std::string::npos);
      CheckNothingStored(*log, hwm, committed);
    }
  }
  // A codec id Kafka does not define.
  std::string six = Batch(Records(3), Offset(2), Codec::kNone);
  coding::StoreBE<int16_t>(six.data() + batch_field::kAttributes, 6);
  Resign(&six);
  CHECK(log->AppendBatch(Bytes(six)).status().is(StorageErrc::kUnsupportedBatch));
  CheckNothingStored(*log, hwm, committed);
}

TEST_CASE("compressed records must match the header's count and offset deltas", "[log][compression]") {
  MemEnv env;
  auto log = OpenOk(&env);
  const std::string three = Batch(Records(3), Offset(0), Codec::kNone);
  const std::string two = Batch(Records(2), Offset(0), Codec::kNone);
  const std::string one = Batch(Records(1), Offset(0), Codec::kNone);
  const std::string records2 = two.substr(kBatchHeaderSize);
  const std::string records3 = three.substr(kBatchHeaderSize);
  for (Codec c : kCodecs) {
    INFO(compression::CodecName(c));
    const int id = static_cast<int>(c);
    const Offset hwm = log->HighWatermark();
    const Position committed = log->ActiveSegment().committed;
    // The header says 3, the compressed records hold 2.
    Status s = log->AppendBatch(Bytes(WithPayload(three, id, Compressed(c, records2), 3, 2))).status();
    CHECK(s.is(StorageErrc::kMalformedBatch));
    CHECK(s.ToString().find("record 2 at byte " + std::to_string(records2.size()) +
                            " of the decompressed records") != std::string::npos);
    // The header says 2, they hold 3.
    s = log->AppendBatch(Bytes(WithPayload(two, id, Compressed(c, records3), 2, 1))).status();
    CHECK(s.ToString().find("left over after the last of 2 records") != std::string::npos);
    // lastOffsetDelta beyond the records.
    s = log->AppendBatch(Bytes(WithPayload(three, id, Compressed(c, records3), 3, 5))).status();
    CHECK(s.is(StorageErrc::kMalformedBatch));
    // Two records that both have offsetDelta 0.
    const std::string dup = one.substr(kBatchHeaderSize) + one.substr(kBatchHeaderSize);
    s = log->AppendBatch(Bytes(WithPayload(two, id, Compressed(c, dup), 2, 1))).status();
    CHECK(s.ToString().find("offsetDelta 0 (previous 0") != std::string::npos);
    CheckNothingStored(*log, hwm, committed);
    // The same records, consistent: accepted.
    REQUIRE_OK(log->AppendBatch(Bytes(WithPayload(three, id, Compressed(c, records3), 3, 2))));
  }
  CHECK(log->HighWatermark() == Offset(12));
}

TEST_CASE("a decompression bomb is refused at the limit", "[log][compression]") {
  const std::string plain = Batch(Records(50), Offset(0), Codec::kNone);
  for (Codec c : kCodecs) {
    const std::string z = Batch(Records(50), Offset(0), c);
    BatchHeader h;
    const size_t records = plain.size() - kBatchHeaderSize;
    REQUIRE_OK(ValidateBatch(Bytes(z), Validation::kCompressedRecords, &h, records));
    const Status s = ValidateBatch(Bytes(z), Validation::kCompressedRecords, &h, records - 1);
    CHECK(s.is(StorageErrc::kMalformedBatch));
    CHECK(s.ToString().find("limit of " + std::to_string(records - 1) + " bytes") != std::string::npos);
    std::string buffer;
    RecordIterator it(h, Bytes(z), &buffer, records - 1);
    RecordView r;
    CHECK_FALSE(it.Next(&r));
    CHECK(it.status().is(StorageErrc::kMalformedBatch));
  }
  // The log's own limit (kMaxDecompressedBatchBytes), with zstd frames of 1 MiB of zeros back to
  // back: a few KiB that would decompress to more than the limit.
  MemEnv env;
  auto log = OpenOk(&env);
  const std::string frame = Compressed(Codec::kZstd, std::string(1 << 20, '\0'));
  std::string payload;
  for (size_t i = 0; i <= kMaxDecompressedBatchBytes >> 20; ++i) payload += frame;
  REQUIRE(payload.size() < 100000);
  const std::string bomb = WithPayload(plain, static_cast<int>(Codec::kZstd), payload, 1, 0);
  const Status s = log->AppendBatch(Bytes(bomb)).status();
  CHECK(s.is(StorageErrc::kMalformedBatch));
  CHECK(s.ToString().find("limit of " + std::to_string(kMaxDecompressedBatchBytes) + " bytes") !=
        std::string::npos);
  CheckNothingStored(*log, Offset(0), Position(0));
}
