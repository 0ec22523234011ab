// libFuzzer target: the RecordBatch v2 decoder and the other decoders remote peers feed with
// untrusted bytes (segment header, seal record, checkpoint slots, partition slot).
// Properties checked beyond "no crash, no sanitizer report":
//   * a batch that validates at Validation::kRecords re-encodes, through BatchBuilder, into a
//     batch that validates and holds the same records (compressed with the batch's codec when it
//     names one); compressed records are decompressed up to 1 MiB;
//   * filler batches of any size the input names are exactly that size and validate.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rdmq/common/coding.h"
#include "rdmq/storage/format.h"
#include "rdmq/storage/record_batch.h"

using namespace rdmq;
using namespace rdmq::storage;

namespace {

// Decompressed records at most (a bigger bomb is refused just the same, only more slowly).
constexpr size_t kMaxDecompressed = 1 << 20;

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "fuzz_batch_decoder: property violated: %s\n", what);
  std::abort();
}

void Reencode(const BatchHeader& h, std::span<const std::byte> batch) {
  struct Owned {
    std::optional<std::string> key, value;
    std::vector<std::string> hkeys;
    std::vector<std::optional<std::string>> hvalues;
    int64_t ts;
  };
  std::vector<Owned> owned;
  std::string buffer;
  RecordIterator it(h, batch, &buffer, kMaxDecompressed);
  RecordView r;
  while (it.Next(&r)) {
    Owned o;
    if (r.key) o.key = std::string(coding::AsChars(*r.key));
    if (r.value) o.value = std::string(coding::AsChars(*r.value));
    o.ts = h.base_timestamp.value() + r.timestamp_delta;
    HeaderIterator hi(r.headers, r.header_count);
    HeaderView hv;
    while (hi.Next(&hv)) {
      o.hkeys.emplace_back(coding::AsChars(hv.key));
      o.hvalues.push_back(hv.value ? std::optional<std::string>(std::string(coding::AsChars(*hv.value)))
                                   : std::nullopt);
    }
    if (!hi.status().ok()) Violation("headers of a validated batch do not parse");
    owned.push_back(std::move(o));
  }
  if (!it.status().ok()) Violation("records of a validated batch do not parse");
  if (owned.empty()) return;
  std::vector<std::vector<HeaderInput>> hin(owned.size());
  std::vector<RecordInput> in(owned.size());
  for (size_t i = 0; i < owned.size(); ++i) {
    for (size_t j = 0; j < owned[i].hkeys.size(); ++j) {
      HeaderInput x;
      x.key = owned[i].hkeys[j];
      if (owned[i].hvalues[j]) x.value = std::string_view(*owned[i].hvalues[j]);
      hin[i].push_back(x);
    }
    if (owned[i].key) in[i].key = std::string_view(*owned[i].key);
    if (owned[i].value) in[i].value = std::string_view(*owned[i].value);
    in[i].headers = hin[i];
    in[i].timestamp = TimestampMs(owned[i].ts);
  }
  BatchOptions bo;
  bo.base_offset = h.base_offset;
  bo.attributes = static_cast<int16_t>(h.compression());
  const std::string again = EncodeBatch(bo, in);
  BatchHeader h2;
  if (again.empty() || !ValidateBatch(coding::AsBytes(again), Validation::kRecords, &h2).ok()) {
    Violation("re-encoded batch does not validate");
  }
  if (h2.record_count != static_cast<int32_t>(owned.size())) Violation("re-encoded record count differs");
  if (h2.compression() != h.compression()) Violation("re-encoded batch has another codec");
  std::string buffer2;
  RecordIterator it2(h2, coding::AsBytes(again), &buffer2);
  size_t i = 0;
  while (it2.Next(&r)) {
    const auto same = [](const std::optional<std::span<const std::byte>>& a,
                         const std::optional<std::string>& b) {
      if (!a || !b) return !a && !b;
      return coding::AsChars(*a) == *b;
    };
    if (!same(r.key, owned[i].key) || !same(r.value, owned[i].value)) Violation("re-encoded record differs");
    if (h2.base_timestamp.value() + r.timestamp_delta != owned[i].ts)
      Violation("re-encoded timestamp differs");
    ++i;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);

  // Back-to-back batches, header-level, then every record and header of each.
  BatchScanner sc(bytes, Validation::kHeader);
  BatchView b;
  std::string buffer;
  while (sc.Next(&b)) {
    RecordIterator it(b.header, b.bytes, &buffer, kMaxDecompressed);
    RecordView r;
    while (it.Next(&r)) {
      HeaderIterator hi(r.headers, r.header_count);
      HeaderView hv;
      while (hi.Next(&hv)) {
      }
    }
    BatchHeader h;
    if (ValidateBatch(b.bytes, Validation::kRecords, &h, kMaxDecompressed).ok()) Reencode(h, b.bytes);
  }
  // Also with CRC checking (the batch fuzzed without its CRC fixed rarely passes; seeds do).
  BatchScanner crc(bytes, Validation::kRecords);
  while (crc.Next(&b)) {
  }

  // rdmq's own little-endian structures.
  if (size >= format::kSlotSize) {
    format::PartitionSlot slot;
    (void)format::DecodePartitionSlot(bytes.data(), &slot);
    format::SealRecord seal;
    (void)format::DecodeSealRecord(bytes.data(), &seal);
    format::Checkpoint ck;
    (void)format::DecodeCheckpoint(bytes.data(), &ck);
  }
  format::SegmentHeader sh;
  (void)format::DecodeSegmentHeader(bytes, &sh);

  // Fillers of the size the input names.
  if (size >= 3) {
    const size_t want = kMinFillerBytes + ((size_t{data[0]} << 16 | size_t{data[1]} << 8 | data[2]) % 20000);
    std::vector<std::byte> buf(want);
    if (!WriteFillerBatch(buf, Offset(7), TimestampMs(1)).ok()) Violation("filler encoding failed");
    BatchHeader fh;
    if (!ValidateBatch(buf, Validation::kRecords, &fh).ok() || fh.total_size() != want ||
        !IsFillerBatch(fh)) {
      Violation("filler batch is not exactly the requested valid control batch");
    }
  }
  return 0;
}
