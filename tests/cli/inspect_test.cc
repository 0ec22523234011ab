// `rdmq partition inspect` on real logs written by the storage engine: every batch reported,
// records dumped exactly, flipped bits reported at the exact position, files never changed.
#include "rdmq/cli/inspect.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "rdmq/common/coding.h"
#include "rdmq/storage/format.h"
#include "rdmq/storage/log.h"
#include "support/test_util.h"

namespace rdmq::cli {
namespace {

namespace fs = std::filesystem;
using storage::AppendResult;
using storage::RecordInput;

struct Written {
  std::vector<AppendResult> batches;
  std::vector<std::string> segment_files;  // oldest first
};

// The logs these tests write: 64 KiB segments of topic 5, partition 1.
storage::LogOptions Opts() {
  storage::LogOptions opts;
  opts.segment_bytes = 64 << 10;
  opts.topic = TopicId(5);
  opts.partition = PartitionId(1);
  return opts;
}

// Writes `batches` batches of 3 records (key k<offset>, value v<offset>, one header) with
// producer id 7, rolling after every `roll_every` batches, and closes the log.
Written WriteLog(const std::string& dir, int batches, int roll_every = 0) {
  auto log = storage::PartitionLog::Open(storage::DefaultEnv(), dir, Opts());
  REQUIRE_OK(log);
  Written w;
  int64_t next = 0;
  for (int b = 0; b < batches; ++b) {
    std::vector<std::string> keys, values;
    for (int i = 0; i < 3; ++i) {
      keys.push_back("k" + std::to_string(next + i));
      values.push_back("v" + std::to_string(next + i));
    }
    const storage::HeaderInput hdr[] = {{"h", "x"}};
    std::vector<RecordInput> recs;
    for (int i = 0; i < 3; ++i)
      recs.push_back({keys[i], values[i], hdr, TimestampMs(1700000000000 + next + i)});
    storage::BatchOptions bo;
    bo.producer_id = ProducerId(7);
    bo.producer_epoch = 0;
    bo.base_sequence = static_cast<int32_t>(next);
    auto r = (*log)->Append(recs, bo);
    REQUIRE_OK(r);
    w.batches.push_back(*r);
    next += 3;
    if (roll_every > 0 && (b + 1) % roll_every == 0 && b + 1 < batches) REQUIRE_OK((*log)->Roll());
  }
  for (const auto& s : (*log)->Segments()) w.segment_files.push_back(s.path);
  REQUIRE_OK((*log)->Close());
  return w;
}

void FlipByte(const std::string& path, uint64_t file_offset, uint8_t mask = 0x10) {
  const int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  uint8_t b = 0;
  REQUIRE(::pread(fd, &b, 1, static_cast<off_t>(file_offset)) == 1);
  b ^= mask;
  REQUIRE(::pwrite(fd, &b, 1, static_cast<off_t>(file_offset)) == 1);
  ::close(fd);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::string SegmentOf(const Written& w, int64_t base) {
  for (const auto& f : w.segment_files) {
    Offset b;
    if (storage::format::ParseSegmentFileName(fs::path(f).filename().string(), &b) && b.value() == base)
      return f;
  }
  FAIL("no segment " << base);
  return {};
}

TEST_CASE("inspect reports every batch and record of a healthy log, changing nothing", "[cli][inspect]") {
  test::TempDir tmp;
  const std::string dir = (tmp / "p1").string();
  const Written w = WriteLog(dir, 10, 4);
  REQUIRE(w.segment_files.size() == 3);
  std::map<std::string, std::string> before;
  for (const auto& e : fs::directory_iterator(dir)) before[e.path().string()] = ReadFile(e.path().string());

  InspectOptions opts;
  opts.records = true;
  auto d = InspectPartition(dir, opts);
  REQUIRE_OK(d);
  CHECK(d->problems.empty());
  REQUIRE(d->has_slot);
  CHECK(d->slot_high_watermark == 30);
  REQUIRE(d->segments.size() == 3);
  CHECK(d->batches == 10);
  CHECK(d->records == 30);
  size_t i = 0;
  for (const SegmentDump& s : d->segments) {
    CHECK(s.header_ok);
    CHECK(s.topic_id == 5);
    CHECK(s.partition == 1);
    CHECK(s.committed_from == (&s == &d->segments.back() ? "slot" : "seal"));
    for (const BatchDump& b : s.batches) {
      REQUIRE(i < w.batches.size());
      const AppendResult& a = w.batches[i++];
      CHECK(a.segment.value() == s.base_offset);
      CHECK(b.position == a.position.value());
      CHECK(b.file_offset == 4096 + a.position.value());
      CHECK(b.base_offset == a.base_offset.value());
      CHECK(b.last_offset == a.next_offset.value() - 1);
      CHECK(b.bytes == a.bytes);
      CHECK(b.crc_ok);
      CHECK(b.producer_id == 7);
      CHECK(b.base_sequence == b.base_offset);
      CHECK_FALSE(b.control);
      REQUIRE(b.records.size() == 3);
      for (const RecordDump& r : b.records) {
        CHECK(r.key == "k" + std::to_string(r.offset));
        CHECK(r.value == "v" + std::to_string(r.offset));
        CHECK(r.timestamp_ms == 1700000000000 + r.offset);
        REQUIRE(r.headers.size() == 1);
        CHECK(r.headers[0].first == "h");
        CHECK(r.headers[0].second == "x");
      }
    }
  }
  CHECK(i == w.batches.size());

  std::ostringstream text;
  PrintInspectText(*d, false, text);
  CHECK(text.str().find("3 segments, 10 batches, 30 records") != std::string::npos);
  CHECK(text.str().find("every CRC verified, no problems") != std::string::npos);
  CHECK(text.str().find("MISMATCH") == std::string::npos);
  std::ostringstream with_records;
  PrintInspectText(*d, true, with_records);
  CHECK(with_records.str().find("offset 29  2023-11-14T22:13:20.029Z  key k29  value v29  headers h=x") !=
        std::string::npos);

  const auto j = nlohmann::json::parse(InspectToJson(*d, true));
  CHECK(j["summary"]["batches"] == 10);
  CHECK(j["summary"]["records"] == 30);
  CHECK(j["summary"]["problems"] == 0);
  CHECK(j["slot"]["high_watermark"] == 30);
  CHECK(j["segments"][0]["sealed"] == true);
  CHECK(j["segments"][0]["batches"][1]["position"] == w.batches[1].position.value());
  CHECK(j["segments"][2]["batches"][1]["record_list"][2]["value"] == "v29");

  for (const auto& [path, bytes] : before) CHECK(ReadFile(path) == bytes);
}

TEST_CASE("a flipped bit is reported at the exact batch position", "[cli][inspect]") {
  const uint64_t seed = test::TestSeed();
  std::mt19937_64 rng(seed);
  test::TempDir tmp;
  const std::string dir = (tmp / "p1").string();
  const Written w = WriteLog(dir, 9, 3);
  const int victim = static_cast<int>(rng() % w.batches.size());
  const AppendResult& a = w.batches[victim];
  // A byte covered by the CRC: attributes .. end of the batch.
  const uint64_t in_batch =
      storage::batch_field::kAttributes + rng() % (a.bytes - storage::batch_field::kAttributes);
  const uint64_t file_offset = 4096 + a.position.value() + in_batch;
  INFO("batch " << victim << " at position " << a.position.value() << ", byte " << in_batch);
  FlipByte(SegmentOf(w, a.segment.value()), file_offset);

  auto d = InspectPartition(dir, {});
  REQUIRE_OK(d);
  REQUIRE(d->problems.size() >= 1);
  const Problem& p = d->problems.front();
  CHECK(p.file == storage::format::SegmentFileName(a.segment));
  CHECK(p.position == static_cast<int64_t>(a.position.value()));
  CHECK(p.file_offset == static_cast<int64_t>(4096 + a.position.value()));
  CHECK(p.message.find("CRC mismatch in the batch at offset " + std::to_string(a.base_offset.value())) == 0);
  // Every other batch still verifies.
  int bad = 0;
  for (const auto& s : d->segments) {
    for (const auto& b : s.batches) bad += b.crc_ok ? 0 : 1;
  }
  CHECK(bad == 1);
  std::ostringstream text;
  PrintInspectText(*d, false, text);
  const std::string where = storage::format::SegmentFileName(a.segment) + " position " +
                            std::to_string(a.position.value()) + " (file offset " +
                            std::to_string(4096 + a.position.value()) + "): CRC mismatch";
  CHECK(text.str().find(where) != std::string::npos);
  CHECK(text.str().find("MISMATCH") != std::string::npos);
  // A flip in lastOffsetDelta or the record count also contradicts the records themselves and
  // the next batch's base offset: more findings, about this batch or the next one's offset.
  for (const Problem& q : d->problems) {
    INFO(q.message);
    CHECK(q.file == p.file);
    if (q.position != p.position) CHECK(q.message.find("batch base offset") == 0);
  }
  const size_t n = d->problems.size();
  CHECK(text.str().find(std::to_string(n) + (n == 1 ? " problem\n" : " problems\n")) != std::string::npos);
}

TEST_CASE("a damaged batch header stops the walk with its position", "[cli][inspect]") {
  test::TempDir tmp;
  const std::string dir = (tmp / "p1").string();
  const Written w = WriteLog(dir, 5);
  const AppendResult& a = w.batches[2];
  FlipByte(SegmentOf(w, 0), 4096 + a.position.value() + storage::batch_field::kMagic,
           0x40);  // magic 2 -> 0x42
  auto d = InspectPartition(dir, {});
  REQUIRE_OK(d);
  REQUIRE(d->problems.size() == 1);
  CHECK(d->problems[0].position == static_cast<int64_t>(a.position.value()));
  CHECK(d->problems[0].message.find("malformed batch header") == 0);
  CHECK(d->segments[0].batches.size() == 2);
}

TEST_CASE("without a slot the committed end is found by scanning, torn tails are notes", "[cli][inspect]") {
  test::TempDir tmp;
  const std::string dir = (tmp / "p1").string();
  const Written w = WriteLog(dir, 6);
  fs::remove(fs::path(dir) / "partition.slot");
  const AppendResult& last = w.batches.back();
  const uint64_t end = last.position.value() + last.bytes;

  auto d = InspectPartition(dir, {});
  REQUIRE_OK(d);
  CHECK(d->problems.empty());
  REQUIRE(d->segments.size() == 1);
  CHECK(d->segments[0].committed_from == "scan");
  CHECK(d->segments[0].committed_end == end);
  CHECK(d->batches == 6);

  // Garbage past the end: a torn tail, reported as a note with its position, not a problem.
  FlipByte(w.segment_files[0], 4096 + end + 9, 0x55);
  d = InspectPartition(dir, {});
  REQUIRE_OK(d);
  CHECK(d->problems.empty());
  CHECK(d->batches == 6);
  bool noted = false;
  for (const auto& n : d->notes) noted |= n.find("position " + std::to_string(end)) != std::string::npos;
  CHECK(noted);

  // Damage below the checkpointed position is a problem even when scanning.
  REQUIRE(d->segments[0].has_checkpoint);
  REQUIRE(d->segments[0].checkpoint_position == end);  // Close() checkpointed everything
  FlipByte(w.segment_files[0], 4096 + w.batches[1].position.value() + 40);
  d = InspectPartition(dir, {});
  REQUIRE_OK(d);
  REQUIRE(d->problems.size() >= 1);
  CHECK(d->problems[0].position == static_cast<int64_t>(w.batches[1].position.value()));
  CHECK(d->problems[0].message.find("durable data is damaged") != std::string::npos);
}

TEST_CASE("inspect one segment file, or one segment of a directory", "[cli][inspect]") {
  test::TempDir tmp;
  const std::string dir = (tmp / "p1").string();
  const Written w = WriteLog(dir, 6, 2);
  REQUIRE(w.segment_files.size() == 3);
  auto d = InspectPartition(w.segment_files[1], {});
  REQUIRE_OK(d);
  REQUIRE(d->segments.size() == 1);
  CHECK(d->segments[0].base_offset == 6);
  CHECK(d->batches == 2);
  CHECK(d->problems.empty());

  InspectOptions only;
  only.segment = 12;
  d = InspectPartition(dir, only);
  REQUIRE_OK(d);
  REQUIRE(d->segments.size() == 1);
  CHECK(d->segments[0].base_offset == 12);
  only.segment = 13;
  auto missing = InspectPartition(dir, only);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().context().find("no segment with base offset 13") != std::string::npos);
}

TEST_CASE("inspect refuses what is not a partition and reports foreign segment files", "[cli][inspect]") {
  test::TempDir tmp;
  auto r = InspectPartition((tmp / "nope").string(), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().context().find("nope") != std::string::npos);

  fs::create_directories(tmp / "empty");
  std::ofstream(tmp / "empty" / "notes.txt") << "hi";
  r = InspectPartition((tmp / "empty").string(), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().is(Errc::kNotFound));
  CHECK(r.status().context().find("not a partition directory") != std::string::npos);

  r = InspectPartition((tmp / "empty" / "notes.txt").string(), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().is(Errc::kInvalidArgument));

  // A .seg name over bytes that are not a segment, and one too short for a header.
  fs::create_directories(tmp / "bad");
  std::ofstream(tmp / "bad" / storage::format::SegmentFileName(Offset(0))) << std::string(8192, 'x');
  std::ofstream(tmp / "bad" / storage::format::SegmentFileName(Offset(50))) << "short";
  r = InspectPartition((tmp / "bad").string(), {});
  REQUIRE_OK(r);
  REQUIRE(r->problems.size() == 2);
  CHECK(r->problems[0].message.find("bad segment header") == 0);
  CHECK(r->problems[1].message.find("shorter than the 4096-byte segment header") != std::string::npos);
  CHECK_FALSE(r->segments[0].header_ok);
}

TEST_CASE("inspect names the codec of compressed batches and decompresses their records", "[cli][inspect]") {
  test::TempDir tmp;
  const std::string dir = (tmp / "pz").string();
  {
    storage::LogOptions opts;
    opts.topic = TopicId(5);
    opts.partition = PartitionId(1);
    auto log = storage::PartitionLog::Open(storage::DefaultEnv(), dir, opts);
    REQUIRE_OK(log);
    for (int c = 1; c <= 4; ++c) {
      const std::string key = "k" + std::to_string(c), value = "v" + std::to_string(c);
      const RecordInput rec{key, value, {}, TimestampMs(1700000000000)};
      storage::BatchOptions bo;
      bo.attributes = static_cast<int16_t>(c);  // EncodeBatch compresses even when it does not pay
      const std::string b = storage::EncodeBatch(bo, std::span(&rec, 1));
      REQUIRE_OK((*log)->AppendBatch(coding::AsBytes(b)));
    }
    REQUIRE_OK((*log)->Close());
  }
  InspectOptions opts;
  opts.records = true;
  auto d = InspectPartition(dir, opts);
  REQUIRE_OK(d);
  CHECK(d->problems.empty());
  REQUIRE(d->segments.size() == 1);
  const char* names[] = {"gzip", "snappy", "lz4", "zstd"};
  REQUIRE(d->segments[0].batches.size() == 4);
  for (int i = 0; i < 4; ++i) {
    const BatchDump& b = d->segments[0].batches[static_cast<size_t>(i)];
    CHECK(b.compression == names[i]);
    REQUIRE(b.records.size() == 1);
    CHECK(b.records[0].value == "v" + std::to_string(i + 1));
  }
  std::ostringstream text;
  PrintInspectText(*d, false, text);
  CHECK(text.str().find("zstd") != std::string::npos);
  const auto j = nlohmann::json::parse(InspectToJson(*d, true));
  CHECK(j["segments"][0]["batches"][2]["compression"] == "lz4");
  CHECK(j["segments"][0]["batches"][2]["record_list"][0]["key"] == "k3");
}

TEST_CASE("inspect reports an unfinished truncation and the segments past it, changing nothing",
          "[cli][inspect]") {
  test::TempDir tmp;
  const std::string dir = (tmp / "p1").string();
  const Written w = WriteLog(dir, 6, 2);  // segments 0, 6 and 12, two batches each
  REQUIRE(w.segment_files.size() == 3);
  // A truncation to the end of segment 6's first batch, stopped by a crash right after its commit
  // point: the record written, segment 6 still sealed, segment 12 not deleted yet.
  const AppendResult& first = w.batches[2];
  REQUIRE(first.segment.value() == 6);
  storage::format::TruncationRecord cut;
  cut.end = Position(first.position.value() + first.bytes);
  cut.next_offset = first.next_offset;
  cut.max_timestamp = TimestampMs(1700000000008);
  std::byte rec[storage::format::kRecordSize];
  storage::format::EncodeTruncationRecord(cut, rec);
  const std::string seg6 = SegmentOf(w, 6);
  {
    const int fd = ::open(seg6.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, rec, sizeof rec, storage::format::kTruncationRecord) ==
            static_cast<ssize_t>(sizeof rec));
    ::close(fd);
  }
  std::vector<std::string> before;
  for (const auto& f : w.segment_files) before.push_back(ReadFile(f));

  auto d = InspectPartition(dir, {});
  REQUIRE_OK(d);
  CHECK(d->problems.empty());
  REQUIRE(d->segments.size() == 3);
  CHECK_FALSE(d->segments[0].truncating);
  CHECK(d->segments[1].truncating);
  CHECK(d->segments[1].truncation_end == first.position.value() + first.bytes);
  CHECK(d->segments[1].truncation_next_offset == 9);
  const std::string notes = [&] {
    std::string all;
    for (const auto& n : d->notes) all += n + "\n";
    return all;
  }();
  INFO(notes);
  CHECK(notes.find("holds an unfinished truncation to position") != std::string::npos);
  CHECK(notes.find(fs::path(SegmentOf(w, 12)).filename().string() + " is past an unfinished truncation") !=
        std::string::npos);
  std::ostringstream text;
  PrintInspectText(*d, false, text);
  CHECK(text.str().find("truncation: unfinished, to end") != std::string::npos);
  const auto j = nlohmann::json::parse(InspectToJson(*d, false));
  CHECK(j["segments"][1]["truncation"]["next_offset"] == 9);
  CHECK(j["segments"][0]["truncation"].is_null());
  for (size_t i = 0; i < w.segment_files.size(); ++i) CHECK(ReadFile(w.segment_files[i]) == before[i]);

  // Opening the log finishes the cut: segment 12 goes, and inspect finds a clean log ending at 9.
  {
    auto log = storage::PartitionLog::Open(storage::DefaultEnv(), dir, Opts());
    REQUIRE_OK(log);
    REQUIRE_OK((*log)->Close());
  }
  d = InspectPartition(dir, {});
  REQUIRE_OK(d);
  CHECK(d->problems.empty());
  REQUIRE(d->segments.size() == 2);
  CHECK_FALSE(d->segments[1].truncating);
  CHECK(d->segments[1].next_offset == 9);
}

}  // namespace
}  // namespace rdmq::cli
