// RecordBatch v2 encoder/decoder: exact layout, round trips, CRC coverage, fillers, and every kind
// of malformed input.
#include "rdmq/storage/record_batch.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rdmq/common/coding.h"
#include "rdmq/common/crc32c.h"
#include "support/test_util.h"

using namespace rdmq;
using namespace rdmq::storage;

namespace {

std::span<const std::byte> Bytes(const std::string& s) { return coding::AsBytes(s); }

struct OwnedRecord {
  std::optional<std::string> key, value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  int64_t ts = 0;
};

std::string RandomString(std::mt19937_64& rng, size_t max_len) {
  std::string s(rng() % (max_len + 1), '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::vector<OwnedRecord> RandomRecords(std::mt19937_64& rng, int n) {
  std::vector<OwnedRecord> out(static_cast<size_t>(n));
  int64_t ts = 1'700'000'000'000 + static_cast<int64_t>(rng() % 1000);
  for (auto& r : out) {
    if (rng() % 5) r.key = RandomString(rng, rng() % 3 ? 16 : 300);
    if (rng() % 7) r.value = RandomString(rng, rng() % 3 ? 100 : 5000);
    const int nh = static_cast<int>(rng() % 4);
    for (int i = 0; i < nh; ++i) {
      std::optional<std::string> v;
      if (rng() % 3) v = RandomString(rng, 20);
      r.headers.emplace_back(RandomString(rng, 10), v);
    }
    ts += static_cast<int64_t>(rng() % 2000) - 500;  // timestamps may go backwards
    r.ts = ts;
  }
  return out;
}

// Keeps the HeaderInput arrays alive for the RecordInputs pointing at them.
struct Inputs {
  std::vector<std::vector<HeaderInput>> headers;
  std::vector<RecordInput> records;
};
Inputs MakeInputs(const std::vector<OwnedRecord>& owned) {
  Inputs in;
  in.headers.resize(owned.size());
  for (size_t i = 0; i < owned.size(); ++i) {
    for (const auto& [k, v] : owned[i].headers) {
      HeaderInput h;
      h.key = k;
      if (v) h.value = std::string_view(*v);
      in.headers[i].push_back(h);
    }
  }
  for (size_t i = 0; i < owned.size(); ++i) {
    RecordInput r;
    if (owned[i].key) r.key = std::string_view(*owned[i].key);
    if (owned[i].value) r.value = std::string_view(*owned[i].value);
    r.headers = in.headers[i];
    r.timestamp = TimestampMs(owned[i].ts);
    in.records.push_back(r);
  }
  return in;
}

std::optional<std::string> Str(const std::optional<std::span<const std::byte>>& s) {
  if (!s) return std::nullopt;
  return std::string(coding::AsChars(*s));
}

}  // namespace

TEST_CASE("a one-record batch has exactly Kafka's RecordBatch v2 bytes", "[batch]") {
  RecordInput r;
  r.key = std::string_view("k");
  r.value = std::string_view("hello");
  r.timestamp = TimestampMs(0x0102030405060708);
  BatchOptions o;
  o.base_offset = Offset(0x1122334455667788);
  o.producer_id = ProducerId(7);
  o.producer_epoch = 3;
  o.base_sequence = 9;
  o.leader_epoch = 5;
  const std::string b = EncodeBatch(o, std::span(&r, 1));
  // Record: attributes 0, tsDelta 0, offsetDelta 0, key len 1 "k", value len 5 "hello", 0 headers.
  const std::string record_body = std::string("\x00\x00\x00\x02k\x0ahello\x00", 12);
  const std::string record = std::string(1, static_cast<char>(record_body.size() * 2)) + record_body;
  REQUIRE(b.size() == 61 + record.size());
  std::string expect;
  coding::Writer w(&expect);
  w.BE<int64_t>(0x1122334455667788);
  w.BE<int32_t>(static_cast<int32_t>(b.size() - 12));
  w.BE<int32_t>(5);
  w.U8(2);
  w.BE<uint32_t>(0);  // CRC, patched below
  w.BE<int16_t>(0);
  w.BE<int32_t>(0);
  w.BE<int64_t>(0x0102030405060708);
  w.BE<int64_t>(0x0102030405060708);
  w.BE<int64_t>(7);
  w.BE<int16_t>(3);
  w.BE<int32_t>(9);
  w.BE<int32_t>(1);
  w.Bytes(record);
  const uint32_t crc = crc32c::Value(expect.data() + 21, expect.size() - 21);
  coding::StoreBE<uint32_t>(expect.data() + 17, crc);
  CHECK(b == expect);

  BatchHeader h;
  REQUIRE_OK(ValidateBatch(Bytes(b), Validation::kRecords, &h));
  CHECK(h.base_offset == Offset(0x1122334455667788));
  CHECK(h.crc == crc);
  CHECK(h.producer_id == ProducerId(7));
  CHECK(h.record_count == 1);
  CHECK(h.next_offset() == Offset(0x1122334455667789));
}

TEST_CASE("random batches round-trip through the builder and the decoder", "[batch]") {
  std::mt19937_64 rng(test::TestSeed());
  for (int trial = 0; trial < test::Trials(300); ++trial) {
    const auto owned = RandomRecords(rng, 1 + static_cast<int>(rng() % 40));
    const auto in = MakeInputs(owned);
    BatchOptions o;
    o.base_offset = Offset(static_cast<int64_t>(rng() % 1'000'000));
    o.attributes = (rng() % 2) ? kAttrTransactional : 0;
    const std::string b = EncodeBatch(o, in.records);
    REQUIRE(!b.empty());
    BatchHeader h;
    REQUIRE_OK(ValidateBatch(Bytes(b), Validation::kRecords, &h));
    CHECK(h.total_size() == b.size());
    CHECK(h.record_count == static_cast<int32_t>(owned.size()));
    CHECK(h.last_offset_delta == static_cast<int32_t>(owned.size()) - 1);
    CHECK(h.base_offset == o.base_offset);
    CHECK(h.base_timestamp.value() == owned[0].ts);
    int64_t max_ts = owned[0].ts;
    for (const auto& r : owned) max_ts = std::max(max_ts, r.ts);
    CHECK(h.max_timestamp.value() == max_ts);

    RecordIterator it(h, Bytes(b));
    RecordView v;
    size_t i = 0;
    while (it.Next(&v)) {
      REQUIRE(i < owned.size());
      CHECK(v.offset_delta == static_cast<int32_t>(i));
      CHECK(h.base_timestamp.value() + v.timestamp_delta == owned[i].ts);
      CHECK(Str(v.key) == owned[i].key);
      CHECK(Str(v.value) == owned[i].value);
      REQUIRE(v.header_count == static_cast<int32_t>(owned[i].headers.size()));
      HeaderIterator hi(v.headers, v.header_count);
      HeaderView hv;
      size_t j = 0;
      while (hi.Next(&hv)) {
        CHECK(std::string(coding::AsChars(hv.key)) == owned[i].headers[j].first);
        CHECK(Str(hv.value) == owned[i].headers[j].second);
        ++j;
      }
      REQUIRE_OK(hi.status());
      CHECK(j == owned[i].headers.size());
      ++i;
    }
    REQUIRE_OK(it.status());
    CHECK(i == owned.size());
  }
}

TEST_CASE("the CRC covers attributes to the end but not baseOffset, length, epoch or magic", "[batch]") {
  std::mt19937_64 rng(test::TestSeed());
  const auto owned = RandomRecords(rng, 5);
  const auto in = MakeInputs(owned);
  const std::string good = EncodeBatch({}, in.records);
  BatchHeader h;
  REQUIRE_OK(ValidateBatch(Bytes(good), Validation::kCrc, &h));

  // Patching the base offset keeps the CRC valid: the storage node relies on it.
  std::string patched = good;
  PatchBaseOffset(reinterpret_cast<std::byte*>(patched.data()), Offset(123456789));
  REQUIRE_OK(ValidateBatch(Bytes(patched), Validation::kCrc, &h));
  CHECK(h.base_offset == Offset(123456789));

  // A new producer epoch and base sequence (an idempotent producer renumbering) come with a new
  // CRC; the records are untouched.
  std::string renumbered = good;
  PatchProducerState({reinterpret_cast<std::byte*>(renumbered.data()), renumbered.size()}, 7, 4242);
  REQUIRE_OK(ValidateBatch(Bytes(renumbered), Validation::kCrc, &h));
  CHECK(h.producer_epoch == 7);
  CHECK(h.base_sequence == 4242);
  CHECK(renumbered.substr(kBatchHeaderSize) == good.substr(kBatchHeaderSize));

  // Any flipped bit from the attributes on is detected.
  for (size_t at = 21; at < good.size(); ++at) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ (1 << (rng() % 8)));
    const Status s = ValidateBatch(Bytes(bad), Validation::kCrc, &h);
    INFO("flipped byte " << at);
    REQUIRE_FALSE(s.ok());
    CHECK((s.is(StorageErrc::kCorruptBatch) || s.is(StorageErrc::kMalformedBatch)));
    if (at >= 22 && s.is(StorageErrc::kCorruptBatch))
      CHECK(s.ToString().find("CRC mismatch") != std::string::npos);
  }
  // A flipped CRC byte is reported as a mismatch too.
  std::string bad = good;
  bad[18] ^= 0x40;
  CHECK(ValidateBatch(Bytes(bad), Validation::kCrc, &h).is(StorageErrc::kCorruptBatch));
  // Header-only validation does not look at the CRC.
  CHECK(ValidateBatch(Bytes(bad), Validation::kHeader, &h).ok());
}

TEST_CASE("truncated, oversized and malformed headers are rejected with a reason", "[batch]") {
  RecordInput r;
  r.value = std::string_view("payload");
  const std::string good = EncodeBatch({}, std::span(&r, 1));
  BatchHeader h;
  for (size_t n = 0; n < good.size(); ++n) {
    const Status s = ValidateBatch(Bytes(good.substr(0, n)), Validation::kRecords, &h);
    INFO("prefix of " << n << " bytes");
    CHECK(s.is(StorageErrc::kMalformedBatch));
  }
  auto with = [&](size_t at, auto value) {
    std::string b = good;
    coding::StoreBE(b.data() + at, value);
    return b;
  };
  Status s = ValidateBatch(Bytes(with(16, int8_t{1})), Validation::kHeader, &h);
  CHECK(s.is(StorageErrc::kMalformedBatch));
  CHECK(s.ToString().find("magic byte is 1") != std::string::npos);
  s = ValidateBatch(Bytes(with(8, int32_t{-5})), Validation::kHeader, &h);
  CHECK(s.ToString().find("batchLength -5") != std::string::npos);
  s = ValidateBatch(Bytes(with(8, int32_t{1 << 30})), Validation::kHeader, &h);
  CHECK(s.ToString().find("exceeds the 1 GiB limit") != std::string::npos);
  s = ValidateBatch(Bytes(with(8, int32_t{100000})), Validation::kHeader, &h);
  CHECK(s.ToString().find("runs past the end") != std::string::npos);
  s = ValidateBatch(Bytes(with(57, int32_t{-1})), Validation::kHeader, &h);
  CHECK(s.ToString().find("negative record count") != std::string::npos);
  s = ValidateBatch(Bytes(with(23, int32_t{-2})), Validation::kHeader, &h);
  CHECK(s.ToString().find("negative lastOffsetDelta") != std::string::npos);
}

namespace {
// Re-signs a batch after editing it, so that record-level checks (not the CRC) must catch it.
std::string Resign(std::string b) {
  coding::StoreBE<uint32_t>(b.data() + 17, crc32c::Value(b.data() + 21, b.size() - 21));
  return b;
}
}  // namespace

TEST_CASE("malformed records are reported with the record and byte", "[batch]") {
  RecordInput r[2];
  r[0].key = std::string_view("key");
  r[0].value = std::string_view("value");
  r[1].value = std::string_view("v2");
  const std::string good = EncodeBatch({}, r);
  BatchHeader h;
  REQUIRE_OK(ValidateBatch(Bytes(good), Validation::kRecords, &h));

  // Record count larger than what is there.
  std::string b = good;
  coding::StoreBE<int32_t>(b.data() + 57, 3);
  Status s = ValidateBatch(Bytes(Resign(b)), Validation::kRecords, &h);
  CHECK(s.is(StorageErrc::kMalformedBatch));
  CHECK(s.ToString().find("record 2") != std::string::npos);

  // Record count smaller: bytes left over.
  b = good;
  coding::StoreBE<int32_t>(b.data() + 57, 1);
  s = ValidateBatch(Bytes(Resign(b)), Validation::kRecords, &h);
  CHECK(s.ToString().find("left over") != std::string::npos);

  // First record's length varint claims more than the batch holds.
  b = good;
  b[61] = static_cast<char>(0x7e);  // zigzag 63
  s = ValidateBatch(Bytes(Resign(b)), Validation::kRecords, &h);
  CHECK(s.ToString().find("runs past the batch end") != std::string::npos);

  // Key length -2 (zigzag 3).
  b = good;
  b[61 + 1 + 3] = static_cast<char>(3);
  s = ValidateBatch(Bytes(Resign(b)), Validation::kRecords, &h);
  CHECK(s.ToString().find("key length -2") != std::string::npos);

  // Attributes that claim snappy over plain records: they do not decompress.
  b = good;
  coding::StoreBE<int16_t>(b.data() + 21, 2);
  s = ValidateBatch(Bytes(Resign(b)), Validation::kRecords, &h);
  CHECK(s.is(StorageErrc::kMalformedBatch));
  CHECK(s.ToString().find("do not decompress") != std::string::npos);
  // A codec id Kafka does not define.
  coding::StoreBE<int16_t>(b.data() + 21, 5);
  s = ValidateBatch(Bytes(Resign(b)), Validation::kRecords, &h);
  CHECK(s.is(StorageErrc::kUnsupportedBatch));
}

TEST_CASE("BatchBuilder refuses records that do not fit and writes nothing for them", "[batch]") {
  std::vector<std::byte> buf(300, std::byte{0xAA});
  BatchBuilder b(buf.data(), 200, {});  // room for the header and two 57-byte records
  RecordInput r;
  const std::string v(50, 'x');
  r.value = std::string_view(v);
  CHECK(b.Add(r));
  CHECK(b.Add(r));
  const size_t before = b.size();
  CHECK_FALSE(b.Add(r));
  CHECK(b.size() == before);
  CHECK(buf[before] == std::byte{0xAA});
  const size_t n = b.Finish();
  BatchHeader h;
  REQUIRE_OK(ValidateBatch({buf.data(), n}, Validation::kRecords, &h));
  CHECK(h.record_count == 2);
  CHECK(buf[200] == std::byte{0xAA});  // never wrote past its capacity
  BatchBuilder empty(buf.data(), 10, {});
  CHECK_FALSE(empty.Add(r));
  CHECK(empty.Finish() == 0);
}

TEST_CASE("filler batches take exactly the requested size and parse as Kafka control batches", "[batch]") {
  std::vector<std::byte> buf((1 << 20) + 256);
  auto check = [&](size_t size) {
    INFO("size " << size);
    std::fill(buf.begin(), buf.begin() + static_cast<long>(size + 8), std::byte{0x5c});
    REQUIRE_OK(WriteFillerBatch({buf.data(), size}, Offset(42), TimestampMs(1000)));
    CHECK(buf[size] == std::byte{0x5c});
    BatchHeader h;
    REQUIRE_OK(ValidateBatch({buf.data(), size}, Validation::kRecords, &h));
    CHECK(h.total_size() == size);
    CHECK(h.is_control());
    CHECK(h.is_transactional());
    CHECK(IsFillerBatch(h));
    CHECK(h.base_offset == Offset(42));
    CHECK(h.max_timestamp == TimestampMs(1000));
    RecordIterator it(h, {buf.data(), size});
    RecordView r;
    int n = 0;
    while (it.Next(&r)) {
      ++n;
      CHECK(h.base_timestamp.value() + r.timestamp_delta == 1000);
      if (size < kMinMarkerFillerBytes) continue;  // short filler: no whole marker
      REQUIRE(r.key.has_value());
      REQUIRE(r.key->size() == 4);
      CHECK(coding::LoadBE<int16_t>(r.key->data()) == 0);      // version
      CHECK(coding::LoadBE<int16_t>(r.key->data() + 2) == 0);  // abort marker
      REQUIRE(r.value.has_value());
      REQUIRE(r.value->size() >= 6);
      CHECK(coding::LoadBE<int16_t>(r.value->data()) == 0);
      CHECK(coding::LoadBE<int32_t>(r.value->data() + 2) == -1);
    }
    REQUIRE_OK(it.status());
    CHECK(n == h.record_count);
    CHECK(n <= 2);
  };
  for (size_t size = kMinFillerBytes; size < 20000; ++size) check(size);
  // Where one record cannot take the size (its length varint grows), two markers do.
  REQUIRE_OK(WriteFillerBatch({buf.data(), 126}, Offset(0), TimestampMs(0)));
  BatchHeader two;
  REQUIRE_OK(DecodeBatchHeader({buf.data(), 126}, &two));
  CHECK(two.record_count == 2);
  CHECK(two.offset_count() == 2);
  REQUIRE_OK(WriteFillerBatch({buf.data(), 125}, Offset(0), TimestampMs(0)));
  REQUIRE_OK(DecodeBatchHeader({buf.data(), 125}, &two));
  CHECK(two.record_count == 1);
  for (size_t size : {size_t{65535}, size_t{65536}, size_t{65537}, size_t{(1 << 20) - 1}, size_t{1 << 20}}) {
    check(size);
  }
  // Around the record-length varint jump at 2^20 bytes of record body.
  for (size_t size = (1 << 20) - 100; size < (1 << 20) + 100 - 16; ++size) check(size);
  for (size_t size = (1 << 14) - 80; size < (1 << 14) + 80; ++size) check(size);
  CHECK(WriteFillerBatch({buf.data(), kMinFillerBytes - 1}, Offset(0), TimestampMs(0))
            .is(StorageErrc::kMalformedBatch));
  CHECK(WriteFillerBatch({buf.data(), 0}, Offset(0), TimestampMs(0)).is(StorageErrc::kMalformedBatch));
}

TEST_CASE("BatchScanner walks back-to-back batches and reports the position of a bad one", "[batch]") {
  std::string all;
  RecordInput r;
  r.value = std::string_view("abc");
  for (int i = 0; i < 5; ++i) {
    BatchOptions o;
    o.base_offset = Offset(i);
    all += EncodeBatch(o, std::span(&r, 1));
  }
  const size_t one = all.size() / 5;
  BatchScanner sc(Bytes(all), Validation::kCrc, 4096);
  BatchView v;
  int n = 0;
  while (sc.Next(&v)) {
    CHECK(v.position == 4096 + n * one);
    CHECK(v.header.base_offset == Offset(n));
    ++n;
  }
  REQUIRE_OK(sc.status());
  CHECK(n == 5);

  all[3 * one + 40] ^= 1;
  BatchScanner bad(Bytes(all), Validation::kCrc, 4096);
  n = 0;
  while (bad.Next(&v)) ++n;
  CHECK(n == 3);
  CHECK(bad.status().is(StorageErrc::kCorruptBatch));
  CHECK(bad.status().ToString().find("position " + std::to_string(4096 + 3 * one)) != std::string::npos);
}
