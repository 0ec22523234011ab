// rdmq-storage-bench: append+commit throughput of a partition log in each persistence mode, for
// 100 B and 1 KiB records, next to a plain memcpy of the same bytes measured in the same run.
//
// Two write paths are measured:
//   Append        the local writer: encode the records into the mapped segment (BatchBuilder),
//                 CRC, persist, publish.
//   WRITE+Commit  what a remote exclusive producer costs the node: the batch arrives by a copy
//                 into the mapped segment (memcpy, as the shm fabric's WRITE), then Commit
//                 validates it (length, magic, CRC, offsets), persists and publishes.
// Baselines, same bytes, same chunk size: memcpy into a warm buffer, and memcpy into freshly
// mapped file pages (the first-touch page faults every new segment pays).
//
//   rdmq-storage-bench [--dir DIR] [--seconds S] [--batch-bytes N] [--segment-mib N]
//                      [--modes none,msync,pmem] [--sizes 100,1024]
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"
#include "rdmq/common/main.h"
#include "rdmq/config/args.h"
#include "rdmq/storage/log.h"

using namespace rdmq;
using namespace rdmq::storage;

namespace {

struct Args {
  std::string dir;
  double seconds = 1.5;
  size_t batch_bytes = 64 << 10;
  uint64_t segment_mib = 64;
  std::vector<std::string> modes = {"none", "msync", "pmem"};
  std::vector<size_t> sizes = {100, 1024};
  double recovery_gib = 1.0;
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = s.find(',', at);
    out.push_back(s.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

// Parses the command line; exits on --help (0) and on a usage error (2).
Args Parse(int argc, char** argv) {
  Args a;
  const char* tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): before any thread
  a.dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/rdmq-storage-bench";
  const config::CommandSpec spec{
      .path = "rdmq-storage-bench",
      .usage = "[options]",
      .summary = "Append+commit throughput per persistence mode, next to memcpy.",
      .options = {
          {"dir", 0, "DIR", "where to put the logs (default $TMPDIR/rdmq-storage-bench; wiped)"},
          {"seconds", 0, "S", "time per measurement (default 1.5)"},
          {"batch-bytes", 0, "N", "bytes of records per batch (default 65536)"},
          {"segment-mib", 0, "N", "segment size (default 64)"},
          {"modes", 0, "LIST", "persistence modes (default none,msync,pmem)"},
          {"sizes", 0, "LIST", "record value sizes in bytes (default 100,1024)"},
          {"recovery-gib", 0, "G", "size of the log killed and recovered at the end (default 1; 0 = skip)"}}};
  int exit_code = 0;
  const auto args = config::ParseCommandLine(spec, argc, argv, &exit_code);
  if (!args) std::exit(exit_code);  // NOLINT(concurrency-mt-unsafe): before any thread
  const Status parsed = [&]() -> Status {
    a.dir = args->GetOr("dir", a.dir);
    RDMQ_ASSIGN_OR_RETURN(a.seconds, args->GetDouble("seconds", a.seconds, 0, 1e9));
    RDMQ_ASSIGN_OR_RETURN(const int64_t batch,
                          args->GetInt("batch-bytes", static_cast<int64_t>(a.batch_bytes), 0,
                                       std::numeric_limits<int64_t>::max()));
    a.batch_bytes = static_cast<size_t>(batch);
    RDMQ_ASSIGN_OR_RETURN(const int64_t segment,
                          args->GetInt("segment-mib", static_cast<int64_t>(a.segment_mib), 0,
                                       std::numeric_limits<int64_t>::max()));
    a.segment_mib = static_cast<uint64_t>(segment);
    if (auto modes = args->Get("modes")) a.modes = Split(*modes);
    RDMQ_ASSIGN_OR_RETURN(a.recovery_gib, args->GetDouble("recovery-gib", a.recovery_gib, 0, 1e6));
    if (auto sizes = args->Get("sizes")) {
      a.sizes.clear();
      for (const auto& s : Split(*sizes)) {
        RDMQ_ASSIGN_OR_RETURN(const int64_t n,
                              config::ParseInt(s, "--sizes", 0, std::numeric_limits<int64_t>::max()));
        a.sizes.push_back(static_cast<size_t>(n));
      }
    }
    return Status::Ok();
  }();
  if (!parsed.ok()) {
    std::fprintf(stderr, "rdmq-storage-bench: %s\n", std::string(parsed.context()).c_str());
    std::exit(2);  // NOLINT(concurrency-mt-unsafe): before any thread
  }
  return a;
}

struct Measurement {
  bool ran = false;
  std::string note;
  uint64_t records = 0;
  uint64_t payload_bytes = 0;
  uint64_t log_bytes = 0;
  double seconds = 0;
  double recs_per_s() const { return static_cast<double>(records) / seconds; }
  double payload_mbps() const { return static_cast<double>(payload_bytes) / seconds / 1e6; }
  double log_mbps() const { return static_cast<double>(log_bytes) / seconds / 1e6; }
};

// The records of one batch: values of `size` bytes, 8-byte keys.
struct BatchInput {
  std::vector<std::string> keys, values;
  std::vector<RecordInput> records;
  BatchInput(size_t size, size_t batch_bytes) {
    const size_t n = std::max<size_t>(1, batch_bytes / (size + 16));
    for (size_t i = 0; i < n; ++i) {
      keys.push_back("key" + std::to_string(10000 + i));
      std::string v(size, '\0');
      for (size_t j = 0; j < size; ++j) v[j] = static_cast<char>('a' + (i + j) % 26);
      values.push_back(std::move(v));
    }
    records.resize(n);
    for (size_t i = 0; i < n; ++i) {
      records[i].key = std::string_view(keys[i]);
      records[i].value = std::string_view(values[i]);
      records[i].timestamp = TimestampMs(1'700'000'000'000);
    }
  }
};

LogOptions Options(const Args& a, PersistMode mode) {
  LogOptions o;
  o.segment_bytes = a.segment_mib << 20;
  o.persist = mode;
  o.retention_bytes = 4 * o.segment_bytes;  // keep the disk footprint small
  return o;
}

Measurement RunAppend(const Args& a, PersistMode mode, size_t size, bool write_commit) {
  Measurement r;
  const std::string dir = a.dir + "/log";
  std::filesystem::remove_all(dir);
  auto log = PartitionLog::Open(DefaultEnv(), dir, Options(a, mode));
  if (!log.ok()) {
    r.note =
        log.status().is(StorageErrc::kNotPmem) ? "not pmem here (no DAX mapping)" : log.status().ToString();
    return r;
  }
  PartitionLog& l = **log;
  BatchInput in(size, a.batch_bytes);
  const std::string encoded = EncodeBatch(BatchOptions{}, in.records);
  const int64_t per_batch = static_cast<int64_t>(in.records.size());
  const uint64_t t0 = MonoNanos();
  const uint64_t until = t0 + static_cast<uint64_t>(a.seconds * 1e9);
  uint64_t batches = 0;
  while (true) {
    if (write_commit) {
      SegmentInfo seg = l.ActiveSegment();
      if (seg.capacity - seg.committed.value() < encoded.size()) {
        if (Status s = l.Roll(); !s.ok()) {
          r.note = s.ToString();
          return r;
        }
        seg = l.ActiveSegment();
      }
      // The producer's WRITE: the batch, with the offsets it assigned, lands in the segment.
      std::byte* at = seg.data() + seg.committed.value();
      std::memcpy(at, encoded.data(), encoded.size());
      PatchBaseOffset(at, seg.next_offset);
      auto c = l.Commit({CommitMode::kExclusive, seg.base_offset, seg.committed, encoded.size(),
                         seg.next_offset + per_batch});
      if (!c.ok()) {
        r.note = c.status().ToString();
        return r;
      }
      r.log_bytes += encoded.size();
    } else {
      auto ap = l.Append(in.records);
      if (!ap.ok()) {
        r.note = ap.status().ToString();
        return r;
      }
      r.log_bytes += ap->bytes;
    }
    r.records += static_cast<uint64_t>(per_batch);
    r.payload_bytes += static_cast<uint64_t>(per_batch) * size;
    if ((++batches & 63) == 0) {
      if (!l.ApplyRetention(TimestampMs(0)).ok()) break;
      if (MonoNanos() >= until) break;
    }
  }
  r.seconds = static_cast<double>(MonoNanos() - t0) / 1e9;
  r.ran = true;
  (void)l.Close();
  std::filesystem::remove_all(dir);
  return r;
}

// memcpy of `total` bytes in `chunk`-sized pieces into a warm 64 MiB buffer.
double MemcpyWarm(uint64_t total, size_t chunk) {
  const size_t cap = 64 << 20;
  std::vector<char> src(chunk, 'x');
  char* dst = static_cast<char*>(std::aligned_alloc(4096, cap));
  std::memset(dst, 0, cap);
  size_t at = 0;
  const uint64_t t0 = MonoNanos();
  for (uint64_t done = 0; done < total; done += chunk) {
    if (at + chunk > cap) at = 0;
    std::memcpy(dst + at, src.data(), chunk);
    at += chunk;
  }
  asm volatile("" : : "r"(dst) : "memory");
  const double s = static_cast<double>(MonoNanos() - t0) / 1e9;
  std::free(dst);
  return static_cast<double>(total) / s / 1e6;
}

// memcpy of `total` bytes into freshly allocated and mapped file pages (a new 64 MiB file each
// time one fills), the page-fault cost every new segment pays.
double MemcpyFreshFile(const std::string& dir, uint64_t total, size_t chunk) {
  const size_t cap = 64 << 20;
  std::vector<char> src(chunk, 'x');
  const std::string path = dir + "/memcpy-target";
  double spent = 0;
  uint64_t done = 0;
  while (done < total) {
    std::filesystem::remove(path);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::posix_fallocate(fd, 0, static_cast<off_t>(cap)) != 0) return 0;
    void* p = ::mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) return 0;
    char* dst = static_cast<char*>(p);
    const uint64_t t0 = MonoNanos();
    for (size_t at = 0; at + chunk <= cap && done < total; at += chunk, done += chunk) {
      std::memcpy(dst + at, src.data(), chunk);
    }
    spent += static_cast<double>(MonoNanos() - t0) / 1e9;
    ::munmap(p, cap);
  }
  std::filesystem::remove(path);
  return static_cast<double>(total) / spent / 1e6;
}

// Writes `gib` GiB of 1 KiB records in a child process, kills it with SIGKILL right after its
// last acknowledged append (mid-stream for the log: no close, no final checkpoint), then times
// the recovering open in this process.
void RecoveryBench(const Args& a) {
  const std::string dir = a.dir + "/recovery";
  std::filesystem::remove_all(dir);
  LogOptions o = Options(a, PersistMode::kNone);
  o.retention_bytes = 0;
  const uint64_t target = static_cast<uint64_t>(a.recovery_gib * (1ull << 30));
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto log = PartitionLog::Open(DefaultEnv(), dir, o);
    if (!log.ok()) std::_Exit(2);
    BatchInput in(1024, a.batch_bytes);
    uint64_t written = 0;
    while (written < target) {
      auto r = (*log)->Append(in.records);
      if (!r.ok()) std::_Exit(3);
      written += r->bytes;
    }
    ::kill(::getpid(), SIGKILL);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (!WIFSIGNALED(st)) {
    std::printf("recovery: the writer failed (status %d)\n", st);
    return;
  }
  const uint64_t t0 = MonoNanos();
  auto log = PartitionLog::Open(DefaultEnv(), dir, o);
  const double s = static_cast<double>(MonoNanos() - t0) / 1e9;
  if (!log.ok()) {
    std::printf("recovery: FAILED: %s\n", log.status().ToString().c_str());
    return;
  }
  const auto& rs = (*log)->recovery();
  uint64_t bytes = 0;
  for (const auto& seg : (*log)->Segments()) bytes += seg.committed.value();
  const double gib = static_cast<double>(bytes) / (1ull << 30);
  std::printf(
      "\nrecovery after SIGKILL: %.2f GiB in %llu segments (page cache warm), %.1f ms = %.3f s/GiB;\n"
      "  CRC-scanned %.1f MiB after the last checkpoint, %llu pages zeroed\n",
      gib, static_cast<unsigned long long>(rs.segments), s * 1000, s / gib,
      static_cast<double>(rs.bytes_scanned) / (1 << 20), static_cast<unsigned long long>(rs.zeroed_pages));
  (void)(*log)->Close();
  std::filesystem::remove_all(dir);
}

std::string Machine() {
  std::string model = "unknown CPU";
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  utsname u;
  ::uname(&u);
  return model + ", " + std::to_string(::sysconf(_SC_NPROCESSORS_ONLN)) + " CPUs, Linux " + u.release;
}

std::string Si(double v) {
  char buf[32];
  if (v >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f k", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  }
  return buf;
}

}  // namespace

static int Main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  log::SetLevel(log::Level::kWarn);
  std::filesystem::remove_all(a.dir);
  std::filesystem::create_directories(a.dir);
  std::printf("rdmq-storage-bench: %s\n", Machine().c_str());
  std::printf("  logs in %s, %llu MiB segments, batches of ~%zu bytes of records, %.1f s per row\n",
              a.dir.c_str(), static_cast<unsigned long long>(a.segment_mib), a.batch_bytes, a.seconds);
  std::printf(
      "  MB/s = 10^6 bytes/s of record values; log MB/s counts the encoded batches; ratio = log MB/s / "
      "memcpy\n\n");
  std::printf("%-7s %-6s %-13s %12s %10s %10s %12s %7s %12s %7s\n", "record", "mode", "path", "records/s",
              "MB/s", "log MB/s", "memcpy MB/s", "ratio", "fresh-map", "ratio");
  const char* forced = std::getenv("PMEM_IS_PMEM_FORCE");
  const bool pmem_forced = forced != nullptr && std::string(forced) == "1";
  for (size_t size : a.sizes) {
    for (const auto& mode_name : a.modes) {
      auto mode = ParsePersistMode(mode_name);
      if (!mode.ok()) {
        std::fprintf(stderr, "%s\n", mode.status().ToString().c_str());
        return 2;
      }
      for (bool wc : {false, true}) {
        const Measurement r = RunAppend(a, *mode, size, wc);
        const char* path = wc ? "WRITE+Commit" : "Append";
        const std::string label = mode_name + (*mode == PersistMode::kPmem && pmem_forced ? "*" : "");
        if (!r.ran) {
          std::printf("%-7zu %-6s %-13s %s\n", size, label.c_str(), path, r.note.c_str());
          continue;
        }
        const double warm = MemcpyWarm(r.log_bytes, a.batch_bytes);
        const double fresh =
            MemcpyFreshFile(a.dir, std::min<uint64_t>(r.log_bytes, 1ull << 30), a.batch_bytes);
        std::printf("%-7zu %-6s %-13s %12s %10.0f %10.0f %12.0f %7.2f %12.0f %7.2f\n", size, label.c_str(),
                    path, Si(r.recs_per_s()).c_str(), r.payload_mbps(), r.log_mbps(), warm,
                    r.log_mbps() / warm, fresh, fresh > 0 ? r.log_mbps() / fresh : 0.0);
        std::fflush(stdout);
      }
    }
  }
  if (a.recovery_gib > 0) RecoveryBench(a);
  if (pmem_forced) {
    std::printf(
        "\n* PMEM_IS_PMEM_FORCE=1: libpmem treats this non-DAX file as persistent memory, so pmem mode\n"
        "  runs its cache-line flush path (pmem_persist) on the page cache: the cost, not durability.\n");
  } else {
    std::printf(
        "\nWithout a DAX device, run again with PMEM_IS_PMEM_FORCE=1 to measure pmem mode's flush path.\n");
  }
  std::filesystem::remove_all(a.dir);
  return 0;
}

int main(int argc, char** argv) {
  return rdmq::RunMain("rdmq-storage-bench", [&] { return Main(argc, argv); });
}
