// rdmq-storage-demo: appends to a partition log, crashes on purpose (a forked writer is killed
// with SIGKILL mid-stream), recovers and prints what it found.
//
//   rdmq-storage-demo [--dir DIR] [--mode msync|none|pmem] [--kill-after-ms MS]
//                     [--record-bytes N] [--batch-records N] [--segment-mib N]
//
// Exit status 0 when every acknowledged record was recovered with its exact bytes and nothing
// invalid is readable, 1 otherwise, 2 on bad arguments.
#include "rdmq/common/main.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"
#include "rdmq/config/args.h"
#include "rdmq/storage/log.h"

using namespace rdmq;
using namespace rdmq::storage;

namespace {

struct Args {
  std::string dir = "/tmp/rdmq-storage-demo";
  PersistMode mode = PersistMode::kMsync;
  int kill_after_ms = 400;
  size_t record_bytes = 100;
  int batch_records = 1000;
  uint64_t segment_mib = 16;
};

// Parses the command line with config's parser, as every rdmq tool does. nullopt: the tool ends
// with *exit_code (0 after --help, 2 on a usage error, already reported).
std::optional<Args> Parse(int argc, char** argv, int* exit_code) {
  const config::CommandSpec spec{
      .path = "rdmq-storage-demo",
      .summary =
          "Appends to a partition log in a child process, kills it with SIGKILL mid-stream, "
          "recovers the log and checks every acknowledged record.",
      .options = {
          {"dir", 0, "DIR",
           "log directory (default /tmp/rdmq-storage-demo; a log there is wiped first; any other "
           "non-empty directory is refused)"},
          {"mode", 0, "M", "persistence: msync (default), none, pmem"},
          {"kill-after-ms", 0, "MS", "how long the writer runs before the kill (default 400)"},
          {"record-bytes", 0, "N", "value size (default 100)"},
          {"batch-records", 0, "N", "records per batch (default 1000)"},
          {"segment-mib", 0, "N", "segment size (default 16)"},
      }};
  const auto args = config::ParseCommandLine(spec, argc, argv, exit_code);
  if (!args) return std::nullopt;
  Args a;
  a.dir = args->GetOr("dir", a.dir);
  Status bad;
  if (const auto m = args->Get("mode")) {
    auto mode = ParsePersistMode(*m);
    if (mode.ok()) {
      a.mode = *mode;
    } else {
      bad = config::UsageError("--mode: " + std::string(mode.status().context()));
    }
  }
  const auto number = [&](std::string_view name, int64_t fallback, int64_t min, int64_t max) -> int64_t {
    auto v = args->GetInt(name, fallback, min, max);
    if (!v.ok() && bad.ok()) bad = v.status();
    return v.ok() ? *v : fallback;
  };
  a.kill_after_ms = static_cast<int>(number("kill-after-ms", a.kill_after_ms, 0, INT32_MAX));
  a.record_bytes =
      static_cast<size_t>(number("record-bytes", static_cast<int64_t>(a.record_bytes), 1, 1 << 30));
  a.batch_records = static_cast<int>(number("batch-records", a.batch_records, 1, INT32_MAX));
  a.segment_mib =
      static_cast<uint64_t>(number("segment-mib", static_cast<int64_t>(a.segment_mib), 1, 1 << 20));
  if (!bad.ok()) {
    std::fprintf(stderr, "%s: %s\n", spec.path.c_str(), std::string(bad.context()).c_str());
    *exit_code = 2;
    return std::nullopt;
  }
  return a;
}

// The value of record `offset`: deterministic, so the checker can recompute it.
void FillValue(int64_t offset, std::string* v) {
  uint64_t x = static_cast<uint64_t>(offset) * 0x9E3779B97F4A7C15ULL + 1;
  for (size_t i = 0; i < v->size(); i += 8) {
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    std::memcpy(v->data() + i, &x, std::min<size_t>(8, v->size() - i));
  }
}

LogOptions Options(const Args& a) {
  LogOptions o;
  o.segment_bytes = a.segment_mib << 20;
  o.persist = a.mode;
  return o;
}

[[noreturn]] void Writer(const Args& a, int fd) {
  auto log = PartitionLog::Open(DefaultEnv(), a.dir, Options(a));
  if (!log.ok()) {
    std::fprintf(stderr, "writer: %s\n", log.status().ToString().c_str());
    std::_Exit(3);
  }
  std::vector<std::string> values(static_cast<size_t>(a.batch_records), std::string(a.record_bytes, '\0'));
  std::vector<std::string> keys(values.size());
  std::vector<RecordInput> recs(values.size());
  while (true) {
    const int64_t first = (*log)->HighWatermark().value();
    for (size_t i = 0; i < recs.size(); ++i) {
      const int64_t off = first + static_cast<int64_t>(i);
      FillValue(off, &values[i]);
      keys[i].assign(1, 'r');
      keys[i] += std::to_string(off);
      recs[i].key = std::string_view(keys[i]);
      recs[i].value = std::string_view(values[i]);
      recs[i].timestamp = WallMillis();
    }
    auto r = (*log)->Append(recs);
    if (!r.ok()) {
      std::fprintf(stderr, "writer: %s\n", r.status().ToString().c_str());
      std::_Exit(4);
    }
    // Acknowledged: everything before this offset is committed.
    const int64_t acked = r->next_offset.value();
    if (::write(fd, &acked, sizeof acked) != sizeof acked) std::_Exit(5);
  }
}

}  // namespace

static int Main(int argc, char** argv) {
  int exit_code = 0;
  const std::optional<Args> parsed = Parse(argc, argv, &exit_code);
  if (!parsed) return exit_code;
  const Args& a = *parsed;
  log::SetLevel(log::Level::kWarn);
  std::error_code ec;
  if (std::filesystem::exists(a.dir, ec) &&
      !std::filesystem::exists(std::filesystem::path(a.dir) / "partition.slot", ec)) {
    // Only ever wipe a directory that holds a partition log (or nothing).
    if (!std::filesystem::is_empty(a.dir, ec)) {
      std::fprintf(stderr, "%s exists and is not a partition log; refusing to clear it\n", a.dir.c_str());
      return 2;
    }
  }
  std::filesystem::remove_all(a.dir, ec);
  if (ec) {
    std::fprintf(stderr, "cannot clear %s: %s\n", a.dir.c_str(), ec.message().c_str());
    return 1;
  }
  std::printf("rdmq storage demo\n");
  std::printf("  log directory     %s\n", a.dir.c_str());
  std::printf("  persistence       %s\n", std::string(PersistModeName(a.mode)).c_str());
  std::printf("  records           %zu-byte values, %d per batch, %llu MiB segments\n", a.record_bytes,
              a.batch_records, static_cast<unsigned long long>(a.segment_mib));

  int fds[2];
  if (::pipe(fds) != 0) return 1;
  const pid_t pid = ::fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    ::close(fds[0]);
    Writer(a, fds[1]);
  }
  ::close(fds[1]);
  std::printf("\n1. a writer process (pid %d) appends and commits; every acknowledged batch is reported\n",
              pid);
  // A reader thread drains the acknowledgements, so that the moment of the kill below is
  // unrelated to where the writer is in its loop.
  std::atomic<int64_t> acked_live{0};
  std::thread reader([&] {
    int64_t v;
    while (::read(fds[0], &v, sizeof v) == static_cast<ssize_t>(sizeof v)) acked_live.store(v);
  });
  const uint64_t start = MonoNanos();
  std::this_thread::sleep_for(std::chrono::milliseconds(a.kill_after_ms));
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  reader.join();  // EOF once the writer is gone: every acknowledgement it sent has been read
  ::close(fds[0]);
  const int64_t acked = acked_live.load();
  const double ran = static_cast<double>(MonoNanos() - start) / 1e9;
  if (!WIFSIGNALED(st)) {
    std::printf("   the writer exited on its own (status %d): see its message above\n", st);
    return 1;
  }
  std::printf(
      "2. killed it with SIGKILL after %.0f ms, mid-stream: %lld records acknowledged (%.1f M records/s)\n",
      ran * 1000, static_cast<long long>(acked), static_cast<double>(acked) / ran / 1e6);

  auto log = PartitionLog::Open(DefaultEnv(), a.dir, Options(a));
  if (!log.ok()) {
    std::printf("3. recovery FAILED: %s\n", log.status().ToString().c_str());
    return 1;
  }
  const RecoveryStats& rs = (*log)->recovery();
  const int64_t hwm = (*log)->HighWatermark().value();
  std::printf(
      "3. recovered in %.2f ms: %llu segments, CRC-checked %llu batches (%.1f MiB) after the last "
      "checkpoint\n",
      rs.seconds * 1000, static_cast<unsigned long long>(rs.segments),
      static_cast<unsigned long long>(rs.batches_scanned), static_cast<double>(rs.bytes_scanned) / (1 << 20));
  std::printf("   records acknowledged   %lld\n", static_cast<long long>(acked));
  std::printf("   records recovered      %lld%s\n", static_cast<long long>(hwm),
              hwm > acked ? "  (the batch in flight was complete: kept)" : "");
  std::printf("   torn bytes truncated   %llu%s\n", static_cast<unsigned long long>(rs.truncated_bytes),
              rs.truncated_bytes ? "  (the half-written batch; zeroed so it can never reappear)" : "");

  // Verify every record.
  int64_t checked = 0;
  std::string want(a.record_bytes, '\0');
  bool ok = hwm >= acked;
  for (Offset at = (*log)->LogStartOffset(); ok && at.value() < hwm;) {
    auto r = (*log)->Read(at, 4 << 20);
    if (!r.ok()) {
      std::printf("   read at offset %lld failed: %s\n", static_cast<long long>(at.value()),
                  r.status().ToString().c_str());
      ok = false;
      break;
    }
    BatchScanner sc(r->bytes, Validation::kRecords);
    BatchView b;
    std::string buffer;  // compressed batches' records
    while (ok && sc.Next(&b)) {
      RecordIterator it(b.header, b.bytes, &buffer);
      RecordView rec;
      while (it.Next(&rec)) {
        const int64_t off = b.header.base_offset.value() + rec.offset_delta;
        FillValue(off, &want);
        if (!rec.value || coding::AsChars(*rec.value) != want) {
          std::printf("   offset %lld has the wrong bytes\n", static_cast<long long>(off));
          ok = false;
          break;
        }
        ++checked;
      }
      ok = ok && it.status().ok();
    }
    ok = ok && sc.status().ok();
    at = r->next_offset;
  }
  if (!ok || checked != hwm) {
    std::printf("4. verification FAILED (%lld of %lld records checked)\n", static_cast<long long>(checked),
                static_cast<long long>(hwm));
    return 1;
  }
  std::printf("4. verified all %lld records byte for byte; every acknowledged record is there\n",
              static_cast<long long>(checked));
  std::string value(a.record_bytes, '\0');
  FillValue(hwm, &value);
  std::string key(1, 'r');
  key += std::to_string(hwm);
  RecordInput rec;
  rec.key = std::string_view(key);
  rec.value = std::string_view(value);
  auto more = (*log)->Append(std::span(&rec, 1));
  if (!more.ok()) {
    std::printf("5. append after recovery FAILED: %s\n", more.status().ToString().c_str());
    return 1;
  }
  std::printf("5. the log accepts appends again (next offset %lld)\n",
              static_cast<long long>(more->base_offset.value()));
  return (*log)->Close().ok() ? 0 : 1;
}

int main(int argc, char** argv) {
  return rdmq::RunMain("rdmq-storage-demo", [&] { return Main(argc, argv); });
}
