// libFuzzer target: opening (recovering) a partition log whose files hold arbitrary bytes, in a
// MemEnv. Two input shapes, chosen by the first byte:
//   raw       the rest of the input is the whole content of segment 0 (exercises header checks);
//   template  a valid header is generated and the input supplies the checkpoint slots, the seal
//             record, the truncation record, the reservation word and the data area (exercises
//             recovery's scan, index rebuild, tail truncation, finishing a truncation, reads).
// Properties checked beyond "no crash, no sanitizer report":
//   * if Open succeeds, every offset in [log start, high watermark) reads back as CRC-valid
//     batches (or reports damage), an append succeeds, and after Close a second Open succeeds
//     with the same state (with damage: the same high watermark, and a prefix of the epochs);
//   * if Open fails, the files are byte for byte unchanged.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rdmq/common/coding.h"
#include "rdmq/storage/format.h"
#include "rdmq/storage/log.h"

using namespace rdmq;
using namespace rdmq::storage;

namespace {

constexpr size_t kCapacity = 8192;
constexpr const char* kDir = "/log";
constexpr const char* kSeg = "/log/00000000000000000000.seg";

const uint8_t* g_data = nullptr;
size_t g_size = 0;

[[noreturn]] void Violation(const char* what, const Status& s = Status::Ok()) {
  std::fprintf(stderr, "fuzz_recovery: property violated: %s %s\n", what, s.ToString().c_str());
  if (const char* dump = std::getenv("RDMQ_FUZZ_DUMP")) {
    if (FILE* f = std::fopen(dump, "wb")) {
      std::fwrite(g_data, 1, g_size, f);
      std::fclose(f);
    }
  }
  std::abort();
}

struct Input {
  const uint8_t* p;
  size_t n;
  uint64_t Take(size_t bytes) {
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; ++i) {
      v = (v << 8) | (n ? (--n, *p++) : 0);
    }
    return v;
  }
};

std::string TemplateSegment(Input in) {
  const uint64_t flags = in.Take(1);
  std::string file(format::kSegmentHeaderSize + kCapacity, '\0');
  auto* f = reinterpret_cast<std::byte*>(file.data());
  format::SegmentHeader h;
  h.base_offset = Offset(0);
  h.capacity = kCapacity;
  format::EncodeSegmentHeader(h, f);
  coding::StoreLE<uint64_t>(f + format::kReservationWord, in.Take(2));
  for (int slot = 0; slot < 2; ++slot) {
    format::Checkpoint c;
    c.sequence = 1 + in.Take(1);
    c.committed = Position(in.Take(2) % (kCapacity + 16));
    c.next_offset = Offset(static_cast<int64_t>(in.Take(1)));
    c.max_timestamp = TimestampMs(static_cast<int64_t>(in.Take(1)));
    if (flags & (1u << slot))
      format::EncodeCheckpoint(c, f + (slot ? format::kCheckpointB : format::kCheckpointA));
  }
  if (flags & 4) {
    format::SealRecord s;
    s.end = Position(in.Take(2) % (kCapacity + 16));
    s.next_offset = Offset(static_cast<int64_t>(in.Take(1)));
    format::EncodeSealRecord(s, f + format::kSealRecord);
  }
  if (flags & 8) {
    format::TruncationRecord t;
    t.end = Position(in.Take(2) % (kCapacity + 16));
    t.next_offset = Offset(static_cast<int64_t>(in.Take(1)));
    t.max_timestamp = TimestampMs(static_cast<int64_t>(in.Take(1)));
    format::EncodeTruncationRecord(t, f + format::kTruncationRecord);
  }
  const size_t n = std::min(in.n, kCapacity);
  std::memcpy(f + format::kSegmentHeaderSize, in.p, n);
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  g_data = data;
  g_size = size;
  Input in{data + 1, size - 1};
  const bool raw = (data[0] & 1) != 0;
  const std::string file = raw ? std::string(reinterpret_cast<const char*>(in.p), in.n) : TemplateSegment(in);

  MemEnv env(64 << 20);
  if (!env.CreateDir(kDir).ok() || !env.WriteFile(kSeg, file).ok()) return 0;
  LogOptions o;
  o.segment_bytes = format::kSegmentHeaderSize + kCapacity;
  o.persist = PersistMode::kMsync;
  o.index_interval_bytes = 128;

  auto log = PartitionLog::Open(&env, kDir, o);
  if (!log.ok()) {
    auto now = env.ReadFile(kSeg);
    if (!now.ok() || *now != file) Violation("a refused segment was changed");
    if (env.FileExists(std::string(kDir) + "/partition.slot")) Violation("a refused log got a slot file");
    return 0;
  }
  PartitionLog& l = **log;
  const Offset start = l.LogStartOffset();
  const Offset hwm = l.HighWatermark();
  bool damaged = false;
  for (Offset at = start; at < hwm;) {
    auto r = l.Read(at, 1000);
    if (!r.ok()) {
      // Damage inside checkpointed data is reported, not hidden: fine. Anything else is not.
      if (!r.status().is(StorageErrc::kCorruptBatch)) Violation("read failed", r.status());
      damaged = true;
      break;
    }
    BatchScanner sc(r->bytes, Validation::kCrc);
    BatchView b;
    while (sc.Next(&b)) {
    }
    if (!sc.status().ok()) Violation("read returned an invalid batch", sc.status());
    if (r->next_offset <= at) Violation("read did not advance");
    at = r->next_offset;
  }
  (void)l.OffsetForTimestamp(TimestampMs(static_cast<int64_t>(data[0])));
  // The epoch cache rebuilt from whatever headers recovery walked: epochs and starts increasing,
  // every start inside the log; and it survives a clean reopen as it is.
  const std::vector<EpochStart> epochs = l.LeaderEpochs();
  for (size_t i = 0; i < epochs.size(); ++i) {
    if (epochs[i].epoch < 0 || epochs[i].start < start || epochs[i].start >= hwm) {
      std::fprintf(stderr, "epoch %d starts at %lld; the log is [%lld, %lld)\n", int{epochs[i].epoch},
                   static_cast<long long>(epochs[i].start.value()), static_cast<long long>(start.value()),
                   static_cast<long long>(hwm.value()));
      Violation("epoch outside the log");
    }
    if (i > 0 && (epochs[i].epoch <= epochs[i - 1].epoch || epochs[i].start <= epochs[i - 1].start)) {
      Violation("epochs out of order");
    }
  }
  RecordInput rec;
  rec.value = std::string_view("after recovery");
  auto a = l.Append(std::span(&rec, 1));
  if (!a.ok() && !a.status().is(Errc::kNoSpace)) Violation("append after recovery failed", a.status());
  const Offset hwm2 = l.HighWatermark();
  if (!l.Close().ok()) Violation("close failed");
  log = PartitionLog::Open(&env, kDir, o);
  if (!log.ok()) Violation("reopen after a clean close failed", log.status());
  if ((*log)->HighWatermark() != hwm2) Violation("reopen changed the high watermark");
  // Damage: the reopened log walks the segment, now sealed, from its start and stops at the damage,
  // so the epochs of batches past it (found by the first recovery's CRC scan past a checkpoint)
  // may be gone, as reads of them are; what is left is a prefix of what was.
  const std::vector<EpochStart> reopened = (*log)->LeaderEpochs();
  const bool prefix =
      reopened.size() <= epochs.size() && std::equal(reopened.begin(), reopened.end(), epochs.begin());
  if (damaged ? !prefix : reopened != epochs) {
    for (const auto& [what, list] : {std::pair{"before", epochs}, std::pair{"after", reopened}}) {
      std::fprintf(stderr, "epochs %s:", what);
      for (const EpochStart& e : list)
        std::fprintf(stderr, " %d@%lld", int{e.epoch}, static_cast<long long>(e.start.value()));
      std::fprintf(stderr, "\n");
    }
    Violation("reopen changed the leader epochs");
  }
  if (a.ok()) {
    auto r = (*log)->Read(a->base_offset, 100);
    if (!r.ok()) Violation("the record appended after recovery is unreadable", r.status());
  }
  return 0;
}
