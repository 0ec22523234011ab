// Bad input on media: foreign or damaged files give a clear error and change no byte (hashes of
// every file before and after); devices too small or full give a clear error; flipped bits in
// committed data are reported by the reader with segment and position.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "rdmq/common/crc32c.h"
#include "storage_test_util.h"

using namespace rdmq;
using namespace rdmq::storage;
namespace fs = std::filesystem;

namespace {

LogOptions Opts() {
  LogOptions o;
  o.segment_bytes = 16 << 10;
  o.persist = PersistMode::kMsync;
  o.topic = TopicId(5);
  o.partition = PartitionId(1);
  o.index_interval_bytes = 512;
  return o;
}

std::string ReadFileBytes(const std::string& path) {
  std::string out(fs::file_size(path), '\0');
  FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  REQUIRE(std::fread(out.data(), 1, out.size(), f) == out.size());
  std::fclose(f);
  return out;
}

void WriteAt(const std::string& path, uint64_t offset, const void* data, size_t n) {
  FILE* f = std::fopen(path.c_str(), "r+b");
  REQUIRE(f != nullptr);
  REQUIRE(std::fseek(f, static_cast<long>(offset), SEEK_SET) == 0);
  REQUIRE(std::fwrite(data, 1, n, f) == n);
  std::fclose(f);
}

// Name -> FNV hash of every file in `dir` (and the directory's own listing).
std::map<std::string, uint64_t> Snapshot(const std::string& dir) {
  std::map<std::string, uint64_t> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    out[e.path().filename().string()] = storage::test::Fnv(ReadFileBytes(e.path().string()));
  }
  return out;
}

// A closed log with three sealed segments and an active one.
void MakeLog(const std::string& dir) {
  auto log = PartitionLog::Open(DefaultEnv(), dir, Opts());
  REQUIRE_OK(log.status());
  std::string v(200, 'v');
  while ((*log)->Segments().size() < 4) {
    RecordInput r[5];
    for (auto& x : r) x.value = std::string_view(v);
    REQUIRE_OK((*log)->Append(r).status());
  }
  REQUIRE_OK((*log)->Close());
}

std::string SegPath(const std::string& dir, int index) {
  std::vector<std::string> segs;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".seg") segs.push_back(e.path().string());
  }
  std::sort(segs.begin(), segs.end());
  return segs.at(static_cast<size_t>(index));
}

// Opens, expects the error, and checks that no file changed.
void ExpectRefused(const std::string& dir, StorageErrc code, const std::string& needle) {
  const auto before = Snapshot(dir);
  auto log = PartitionLog::Open(DefaultEnv(), dir, Opts());
  REQUIRE_FALSE(log.ok());
  INFO(log.status().ToString());
  CHECK(log.status().is(code));
  CHECK(log.status().ToString().find(needle) != std::string::npos);
  CHECK(Snapshot(dir) == before);
}

std::map<std::string, uint64_t> MemHashes(MemEnv& env) {
  std::map<std::string, uint64_t> out;
  auto names = env.ListDir("/p");
  REQUIRE_OK(names.status());
  for (const auto& name : *names) {
    auto content = env.ReadFile("/p/" + name);
    REQUIRE_OK(content.status());
    out[name] = storage::test::Fnv(*content);
  }
  return out;
}

void ResignHeader(const std::string& path) {
  std::string h = ReadFileBytes(path).substr(0, 64);
  const uint32_t crc = crc32c::Value(h.data(), 56);
  WriteAt(path, 56, &crc, 4);
}

}  // namespace

TEST_CASE("a segment with a wrong magic is refused and nothing changes", "[bad]") {
  ::rdmq::test::TempDir dir("rdmq-bad");
  MakeLog(dir.str());
  const std::string seg = SegPath(dir.str(), 1);
  WriteAt(seg, 0, "NOTASEG!", 8);
  ExpectRefused(dir.str(), StorageErrc::kBadMagic, seg);
}

TEST_CASE("a segment of another format version is refused and nothing changes", "[bad]") {
  ::rdmq::test::TempDir dir("rdmq-bad");
  MakeLog(dir.str());
  const std::string seg = SegPath(dir.str(), 3);
  const uint32_t v2 = 2;
  WriteAt(seg, 8, &v2, 4);
  ResignHeader(seg);
  ExpectRefused(dir.str(), StorageErrc::kBadVersion, "format version 2");
}

TEST_CASE("a segment whose header CRC does not match is refused", "[bad]") {
  ::rdmq::test::TempDir dir("rdmq-bad");
  MakeLog(dir.str());
  const std::string seg = SegPath(dir.str(), 0);
  const uint8_t flip = 0x77;
  WriteAt(seg, 20, &flip, 1);  // inside the topic id
  ExpectRefused(dir.str(), StorageErrc::kCorruptHeader, "header CRC mismatch");
}

TEST_CASE("truncated segments are refused and nothing changes", "[bad]") {
  ::rdmq::test::TempDir dir("rdmq-bad");
  MakeLog(dir.str());
  const std::string seg = SegPath(dir.str(), 2);
  fs::resize_file(seg, 8192);
  ExpectRefused(dir.str(), StorageErrc::kTruncatedFile, "its header says 4096 + 12288");
  fs::resize_file(seg, 100);
  ExpectRefused(dir.str(), StorageErrc::kTruncatedFile, "shorter than the 4096-byte segment header");
  fs::resize_file(seg, 0);
  ExpectRefused(dir.str(), StorageErrc::kTruncatedFile, seg);
}

TEST_CASE("segments of another partition, misnamed, or with a broken chain are refused", "[bad]") {
  ::rdmq::test::TempDir dir("rdmq-bad");
  MakeLog(dir.str());
  {
    LogOptions other = Opts();
    other.partition = PartitionId(2);
    const auto before = Snapshot(dir.str());
    auto log = PartitionLog::Open(DefaultEnv(), dir.str(), other);
    CHECK(log.status().is(StorageErrc::kSegmentMismatch));
    CHECK(log.status().ToString().find("not topic 5 partition 2") != std::string::npos);
    CHECK(Snapshot(dir.str()) == before);
  }
  // A segment renamed to another base offset.
  const std::string seg = SegPath(dir.str(), 1);
  fs::rename(seg, dir.str() + "/00000000000000999999.seg");
  ExpectRefused(dir.str(), StorageErrc::kSegmentMismatch, "the name says 999999");
  fs::rename(dir.str() + "/00000000000000999999.seg", seg);
  // A missing middle segment breaks the offset chain.
  const std::string saved = ReadFileBytes(seg);
  fs::remove(seg);
  ExpectRefused(dir.str(), StorageErrc::kSegmentMismatch, "but the segment before it ends at");
  // A stray file with a .seg name that is not a segment name.
  FILE* f = std::fopen((dir.str() + "/junk.seg").c_str(), "wb");
  std::fclose(f);
  ExpectRefused(dir.str(), StorageErrc::kSegmentMismatch, "junk.seg");
}

TEST_CASE("a damaged seal record in the middle of the log is refused", "[bad]") {
  ::rdmq::test::TempDir dir("rdmq-bad");
  MakeLog(dir.str());
  const std::string seg = SegPath(dir.str(), 0);
  const uint8_t flip = 0x01;
  WriteAt(seg, 128 + 3, &flip, 1);
  ExpectRefused(dir.str(), StorageErrc::kCorruptHeader, "is not sealed but");
}

TEST_CASE("a partition slot that is not one is refused", "[bad]") {
  ::rdmq::test::TempDir dir("rdmq-bad");
  MakeLog(dir.str());
  WriteAt(dir.str() + "/partition.slot", 8, "XXXX", 4);
  ExpectRefused(dir.str(), StorageErrc::kBadMagic, "partition.slot");
  fs::resize_file(dir.str() + "/partition.slot", 100);
  ExpectRefused(dir.str(), StorageErrc::kTruncatedFile, "partition.slot");
}

TEST_CASE("a segment larger than the device is refused before anything is created", "[bad]") {
  ::rdmq::test::TempDir dir("rdmq-bad");
  struct statvfs st;
  REQUIRE(::statvfs(dir.str().c_str(), &st) == 0);
  const uint64_t device = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
  LogOptions o = Opts();
  o.segment_bytes = device + (1 << 20);
  const std::string sub = dir.str() + "/log";
  auto log = PartitionLog::Open(DefaultEnv(), sub, o);
  REQUIRE_FALSE(log.ok());
  CHECK(log.status().is(StorageErrc::kSegmentTooLarge));
  CHECK(log.status().is(Errc::kNoSpace));
  CHECK(log.status().ToString().find("larger than the device") != std::string::npos);
  CHECK_FALSE(fs::exists(sub));

  // The same on a small in-memory device.
  MemEnv small(1 << 20);
  o.segment_bytes = 2 << 20;
  log = PartitionLog::Open(&small, "/p", o);
  CHECK(log.status().is(StorageErrc::kSegmentTooLarge));
  CHECK_FALSE(small.FileExists("/p/00000000000000000000.seg"));
}

TEST_CASE("a full device refuses the next segment and leaves the log as it was", "[bad]") {
  MemEnv env(3 * (16 << 10) + 4096);  // room for three segments and the slot
  auto log = PartitionLog::Open(&env, "/p", Opts());
  REQUIRE_OK(log.status());
  std::string v(200, 'v');
  RecordInput r[5];
  for (auto& x : r) x.value = std::string_view(v);
  Status failed;
  int appended = 0;
  std::map<std::string, uint64_t> before;
  for (int i = 0; i < 1000 && failed.ok(); ++i) {
    before = MemHashes(env);
    auto a = (*log)->Append(r);
    failed = a.status();
    appended += a.ok();
  }
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.is(StorageErrc::kNoSpace));
  CHECK(failed.ToString().find("free") != std::string::npos);
  CHECK((*log)->Segments().size() == 3);
  // Not one byte changed by the failed append (the full segment was not even sealed).
  CHECK(MemHashes(env) == before);
  CHECK_FALSE((*log)->Segments().back().sealed);
  // Smaller appends that still fit keep working; everything stays readable.
  RecordInput tiny;
  tiny.value = std::string_view("t");
  CHECK((*log)->Append(std::span(&tiny, 1)).ok());
  CHECK(storage::test::ReadAll(**log).size() == static_cast<size_t>(appended * 5 + 1));
}

TEST_CASE("a full disk while creating a segment file leaves no file behind", "[bad]") {
  ::rdmq::test::TempDir dir("rdmq-bad");
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // posix_fallocate past RLIMIT_FSIZE fails with EFBIG, as on a full device.
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{1 << 20, 1 << 20};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    LogOptions o = Opts();
    o.segment_bytes = 4 << 20;
    auto log = PartitionLog::Open(DefaultEnv(), dir.str() + "/log", o);
    const bool ok = !log.ok() && log.status().is(Errc::kNoSpace) &&
                    !fs::exists(dir.str() + "/log/00000000000000000000.seg") &&
                    !fs::exists(dir.str() + "/log/00000000000000000000.seg.tmp");
    if (!ok) std::fprintf(stderr, "%s\n", log.ok() ? "opened" : log.status().ToString().c_str());
    std::_Exit(ok ? 0 : 1);
  }
  int st = 0;
  REQUIRE(::waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}

TEST_CASE("flipped bits in committed data are reported with segment and position", "[bad]") {
  ::rdmq::test::TempDir dir("rdmq-bad");
  MakeLog(dir.str());
  std::vector<SegmentInfo> segs;
  {
    auto log = PartitionLog::Open(DefaultEnv(), dir.str(), Opts());
    REQUIRE_OK(log.status());
    segs = (*log)->Segments();
  }
  // A bit in a record value of the second (sealed) segment, and one in the active segment
  // (below its checkpoint: the log was closed cleanly).
  struct Flip {
    int segment;
    uint64_t position;  // in the data area
  };
  const Flip flips[] = {{1, 3000}, {3, 500}};
  for (const Flip& f : flips) {
    const std::string path = SegPath(dir.str(), f.segment);
    const std::string content = ReadFileBytes(path);
    const uint8_t b = static_cast<uint8_t>(content[4096 + f.position] ^ 0x20);
    WriteAt(path, 4096 + f.position, &b, 1);
  }
  auto log = PartitionLog::Open(DefaultEnv(), dir.str(), Opts());
  REQUIRE_OK(log.status());
  CHECK((*log)->recovery().truncated_bytes == 0);  // committed data is not mistaken for a torn tail
  int reported = 0;
  for (const Flip& f : flips) {
    const SegmentInfo& s = segs[static_cast<size_t>(f.segment)];
    // Find the batch holding the flipped byte by walking the headers.
    BatchScanner sc({s.data(), s.committed.value()}, Validation::kHeader);
    BatchView bv;
    uint64_t batch_pos = 0;
    Offset batch_offset;
    while (sc.Next(&bv)) {
      if (bv.position <= f.position && f.position < bv.position + bv.bytes.size()) {
        batch_pos = bv.position;
        batch_offset = bv.header.base_offset;
      }
    }
    auto r = (*log)->Read(batch_offset, 1);
    REQUIRE_FALSE(r.ok());
    INFO(r.status().ToString());
    CHECK(r.status().is(StorageErrc::kCorruptBatch));
    CHECK(r.status().ToString().find(format::SegmentFileName(s.base_offset) + " position " +
                                     std::to_string(batch_pos)) != std::string::npos);
    CHECK(r.status().ToString().find("CRC mismatch") != std::string::npos);
    ++reported;
  }
  CHECK(reported == 2);
  // Reads of other batches still work.
  auto ok = (*log)->Read((*log)->LogStartOffset(), 100);
  REQUIRE_OK(ok.status());
}

TEST_CASE("a damaged batch header inside a sealed segment is reported where it is", "[bad]") {
  ::rdmq::test::TempDir dir("rdmq-bad");
  MakeLog(dir.str());
  const std::string path = SegPath(dir.str(), 1);
  Offset base;
  REQUIRE(format::ParseSegmentFileName(fs::path(path).filename().string(), &base));
  const std::string content = ReadFileBytes(path);
  // The second batch of the segment: its length field.
  BatchHeader h;
  REQUIRE_OK(DecodeBatchHeader(coding::AsBytes(std::string_view(content).substr(4096)), &h));
  const uint64_t second = h.total_size();
  const int32_t bogus = 0x7ffffff0;
  WriteAt(path, 4096 + second + 8, &bogus, 4);
  auto log = PartitionLog::Open(DefaultEnv(), dir.str(), Opts());
  REQUIRE_OK(log.status());
  auto r = (*log)->Read(h.next_offset(), 1000);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().is(StorageErrc::kCorruptBatch));
  CHECK(r.status().ToString().find(format::SegmentFileName(base) + " position " + std::to_string(second)) !=
        std::string::npos);
  // The first batch of that segment is still readable.
  REQUIRE_OK((*log)->Read(base, 1).status());
}

TEST_CASE("persistence mode pmem refuses a mapping that is not persistent memory", "[bad]") {
  ::rdmq::test::TempDir dir("rdmq-bad");
  MakeLog(dir.str());
  LogOptions o = Opts();
  o.persist = PersistMode::kPmem;
  const auto before = Snapshot(dir.str());
  auto log = PartitionLog::Open(DefaultEnv(), dir.str(), o);
  REQUIRE_FALSE(log.ok());
  CHECK(log.status().is(StorageErrc::kNotPmem));
  CHECK(log.status().ToString().find("use persistence mode msync or none") != std::string::npos);
  CHECK(Snapshot(dir.str()) == before);
}
