// Writes the seed corpora of fuzz_batch_decoder and fuzz_recovery from real logs:
//   storage_fuzz_seed_gen <repo>/tests/fuzz/seeds
// Run by hand when the formats change; the seeds are committed.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "rdmq/common/coding.h"
#include "rdmq/storage/format.h"
#include "rdmq/storage/log.h"

using namespace rdmq;
using namespace rdmq::storage;

namespace {

void Put(const std::filesystem::path& dir, const std::string& name, const std::string& bytes) {
  std::filesystem::create_directories(dir);
  FILE* f = std::fopen((dir / name).c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::perror(name.c_str());
    std::exit(1);
  }
  std::fclose(f);
}

std::string Batch(Offset base, int n, bool headers, size_t value_len, int codec = 0) {
  std::vector<std::string> keys, values;
  for (int i = 0; i < n; ++i) {
    keys.push_back("key-" + std::to_string(i));
    values.push_back(std::string(value_len + static_cast<size_t>(i), static_cast<char>('a' + i % 26)));
  }
  const HeaderInput hs[2] = {{"trace", std::string_view("abc")}, {"empty", std::nullopt}};
  std::vector<RecordInput> recs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (i % 3 != 1) recs[i].key = std::string_view(keys[i]);
    if (i % 4 != 2) recs[i].value = std::string_view(values[i]);
    if (headers) recs[i].headers = hs;
    recs[i].timestamp = TimestampMs(1'700'000'000'000 + i * 7);
  }
  BatchOptions o;
  o.base_offset = base;
  o.producer_id = ProducerId(42);
  o.producer_epoch = 1;
  o.base_sequence = 0;
  o.attributes = static_cast<int16_t>(codec);
  return EncodeBatch(o, recs);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <tests/fuzz/seeds>\n", argv[0]);
    return 2;
  }
  const std::filesystem::path root = argv[1];
  const auto bd = root / "batch_decoder";
  Put(bd, "one-record", Batch(Offset(0), 1, false, 5));
  Put(bd, "many-records-headers", Batch(Offset(100), 12, true, 20));
  Put(bd, "back-to-back",
      Batch(Offset(0), 3, false, 10) + Batch(Offset(3), 2, true, 1) + Batch(kNoOffset, 4, false, 0));
  const char* codecs[] = {"", "gzip", "snappy", "lz4", "zstd"};
  for (int c = 1; c <= 4; ++c)
    Put(bd, std::string("compressed-") + codecs[c], Batch(Offset(0), 6, c % 2 == 0, 30, c));
  for (size_t n : {size_t{68}, size_t{77}, size_t{78}, size_t{126}, size_t{300}}) {
    std::string f(n, '\0');
    if (!WriteFillerBatch({reinterpret_cast<std::byte*>(f.data()), n}, Offset(9), TimestampMs(5)).ok())
      return 1;
    Put(bd, "filler-" + std::to_string(n), f);
  }
  {
    std::string slot(64, '\0');
    format::PartitionSlot s;
    s.generation = 7;
    s.high_watermark = Offset(100);
    s.committed_position = Position(4000);
    format::EncodePartitionSlot(s, reinterpret_cast<std::byte*>(slot.data()));
    Put(bd, "partition-slot", slot);
  }

  // Real segments: exclusive appends, shared commits with a filled hole.
  const auto rc = root / "recovery";
  for (int variant = 0; variant < 3; ++variant) {
    MemEnv env;
    LogOptions o;
    o.segment_bytes = 4096 + 8192;
    o.reservation_lease_ns = 1;
    o.checkpoint_every_commits = 3;
    auto log = PartitionLog::Open(&env, "/log", o);
    if (!log.ok()) return 1;
    for (int i = 0; i < 4 + variant; ++i) {
      const std::string b = Batch(Offset(0), 1 + i % 4, i % 2 == 1, 30);
      if (!(*log)->AppendBatch(coding::AsBytes(b)).ok()) return 1;
    }
    if (variant > 0) {
      const std::string b = Batch(kNoOffset, 2, false, 15);
      auto dead = (*log)->Reserve(b.size());
      auto live = (*log)->Reserve(b.size());
      auto seg = (*log)->ActiveSegment();
      std::memcpy(seg.data() + live->position.value(), b.data(), b.size());
      (void)(*log)->Commit({CommitMode::kShared, live->segment, live->position, b.size(), kNoOffset});
      (void)(*log)->ExpireReservations(10);
      (void)(*log)->ExpireReservations(1000);
      (void)dead;
    }
    const SegmentInfo seg = (*log)->ActiveSegment();
    const uint64_t committed = seg.committed.value();
    const Offset next = seg.next_offset;
    if (variant == 2) {
      // A torn, uncommitted batch past the end.
      const std::string b = Batch(next, 3, false, 40);
      std::memcpy(seg.data() + committed, b.data(), b.size() / 2);
    }
    auto file = env.ReadFile("/log/00000000000000000000.seg");
    if (!file.ok()) return 1;
    (void)(*log)->Close();
    // Raw: the whole file (first byte odd selects raw mode).
    Put(rc, "raw-" + std::to_string(variant), std::string(1, '\x01') + *file);
    // Template: flags (checkpoint A valid), reservation word, two checkpoint slots, data area.
    std::string t;
    t.push_back('\x00');
    t.push_back(static_cast<char>(variant == 1 ? 0x03 : 0x01));
    t += std::string{static_cast<char>(committed >> 8), static_cast<char>(committed & 0xff)};
    for (int slot = 0; slot < 2; ++slot) {
      t.push_back(static_cast<char>(1 + slot));
      const uint64_t pos = slot == 0 ? committed : 0;
      t += std::string{static_cast<char>(pos >> 8), static_cast<char>(pos & 0xff)};
      t.push_back(static_cast<char>(slot == 0 ? next.value() : 0));
      t.push_back('\x00');
    }
    t += file->substr(4096, 8192);
    Put(rc, "template-" + std::to_string(variant), t);
  }
  // A truncation stopped right after its commit point (the power failed at the next durability
  // event): the truncation record is set, the rest not done yet.
  {
    FaultInjectionEnv env;
    LogOptions o;
    o.segment_bytes = 4096 + 8192;
    auto log = PartitionLog::Open(&env, "/log", o);
    if (!log.ok()) return 1;
    std::vector<Offset> starts;
    for (int i = 0; i < 6; ++i) {
      const std::string b = Batch(Offset(0), 1 + i % 3, i % 2 == 0, 25);
      auto a = (*log)->AppendBatch(coding::AsBytes(b));
      if (!a.ok()) return 1;
      starts.push_back(a->base_offset);
    }
    const SegmentInfo seg = (*log)->ActiveSegment();
    env.SetPersistBudget(1);
    if ((*log)->TruncateTo(starts[3]).ok()) return 1;  // it must stop after the record
    auto file = env.ReadFile("/log/00000000000000000000.seg");
    if (!file.ok()) return 1;
    log = Status(Errc::kAborted);
    Put(rc, "raw-truncating", std::string(1, '\x01') + *file);
    // Template: checkpoint A at the old end, the truncation record at the cut, the old data area.
    format::TruncationRecord t;
    if (!format::DecodeTruncationRecord(
            reinterpret_cast<const std::byte*>(file->data()) + format::kTruncationRecord, &t)) {
      return 1;
    }
    const uint64_t committed = seg.committed.value();
    const uint64_t cut = t.end.value();
    std::string tp;
    tp.push_back('\x00');
    tp.push_back('\x09');  // checkpoint A valid, truncation record
    tp += std::string{static_cast<char>(committed >> 8), static_cast<char>(committed & 0xff)};
    for (int slot = 0; slot < 2; ++slot) {
      tp.push_back(static_cast<char>(1 + slot));
      const uint64_t pos = slot == 0 ? committed : 0;
      tp += std::string{static_cast<char>(pos >> 8), static_cast<char>(pos & 0xff)};
      tp.push_back(static_cast<char>(slot == 0 ? seg.next_offset.value() : 0));
      tp.push_back('\x00');
    }
    tp += std::string{static_cast<char>(cut >> 8), static_cast<char>(cut & 0xff)};
    tp.push_back(static_cast<char>(t.next_offset.value()));
    tp.push_back('\x00');
    tp += file->substr(4096, 8192);
    Put(rc, "template-truncating", tp);
  }
  std::printf("seeds written under %s\n", root.c_str());
  return 0;
}
