#include "rdmq/bench/limits.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "rdmq/bench/report.h"
#include "rdmq/common/clock.h"

namespace rdmq::bench {
namespace {

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd&& o) noexcept : fd_(o.Release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.Release();
    }
    return *this;
  }
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A listening socket on 127.0.0.1 with a kernel-chosen port, and a connected pair through it.
struct LoopbackPair {
  Fd client, server;
};

Result<LoopbackPair> ConnectLoopback() {
  Fd listener(socket(AF_INET, SOCK_STREAM, 0));
  if (listener.get() < 0) return Status::FromErrno(errno, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Status::FromErrno(errno, "bind 127.0.0.1:0");
  }
  socklen_t len = sizeof(addr);
  if (getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Status::FromErrno(errno, "getsockname");
  }
  if (listen(listener.get(), 1) != 0) return Status::FromErrno(errno, "listen");
  LoopbackPair pair;
  pair.client = Fd(socket(AF_INET, SOCK_STREAM, 0));
  if (pair.client.get() < 0) return Status::FromErrno(errno, "socket");
  if (connect(pair.client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Status::FromErrno(errno, "connect 127.0.0.1:" + std::to_string(ntohs(addr.sin_port)));
  }
  pair.server = Fd(accept(listener.get(), nullptr, nullptr));
  if (pair.server.get() < 0) return Status::FromErrno(errno, "accept");
  const int one = 1;
  setsockopt(pair.client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(pair.server.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return pair;
}

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

double MeasureMemcpy(size_t bytes, std::chrono::milliseconds time) {
  std::vector<char> src(bytes, 'x'), dst(bytes, 'y');  // touched: no first-touch faults measured
  double best = 0;
  const auto round_ns = static_cast<uint64_t>(std::chrono::nanoseconds(time).count() / 3);
  for (int round = 0; round < 3; ++round) {
    uint64_t copied = 0;
    const uint64_t t0 = MonoNanos();
    uint64_t t1 = t0;
    do {
      std::memcpy(dst.data(), src.data(), bytes);
      // Keep the compiler from proving the copies dead.
      asm volatile("" : : "r"(dst.data()) : "memory");
      copied += bytes;
      t1 = MonoNanos();
    } while (t1 - t0 < round_ns);
    best = std::max(best, static_cast<double>(copied) / static_cast<double>(t1 - t0));
  }
  return best;  // bytes/ns = GB/s
}

Result<double> MeasureTcpBandwidth(std::chrono::milliseconds time) {
  RDMQ_ASSIGN_OR_RETURN(LoopbackPair pair, ConnectLoopback());
  constexpr size_t kChunk = 1u << 20;
  std::atomic<uint64_t> received{0};
  std::thread reader([&] {
    std::vector<char> buf(kChunk);
    for (;;) {
      const ssize_t r = read(pair.server.get(), buf.data(), buf.size());
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      received.fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
    }
  });
  std::vector<char> buf(kChunk, 'z');
  const auto limit = static_cast<uint64_t>(std::chrono::nanoseconds(time).count());
  // Warm-up, then measure what the reader got in the timed part.
  for (int i = 0; i < 16; ++i) (void)WriteAll(pair.client.get(), buf.data(), buf.size());
  const uint64_t r0 = received.load(), t0 = MonoNanos();
  uint64_t t1 = t0;
  bool ok = true;
  while (ok && (t1 = MonoNanos()) - t0 < limit) ok = WriteAll(pair.client.get(), buf.data(), buf.size());
  const uint64_t r1 = received.load();
  shutdown(pair.client.get(), SHUT_WR);
  reader.join();
  if (!ok) return Status::FromErrno(errno, "write to the loopback TCP reader");
  return static_cast<double>(r1 - r0) / static_cast<double>(t1 - t0);
}

Result<LogHistogram> MeasureTcpRoundTrip(size_t size, int rounds) {
  RDMQ_ASSIGN_OR_RETURN(LoopbackPair pair, ConnectLoopback());
  std::thread echo([&] {
    std::vector<char> buf(size);
    while (ReadAll(pair.server.get(), buf.data(), size) && WriteAll(pair.server.get(), buf.data(), size)) {
    }
  });
  std::vector<char> buf(size, 'p');
  LogHistogram h;
  bool ok = true;
  for (int i = -rounds / 10; i < rounds && ok; ++i) {
    const uint64_t t0 = MonoNanos();
    ok = WriteAll(pair.client.get(), buf.data(), size) && ReadAll(pair.client.get(), buf.data(), size);
    if (i >= 0) h.Record(MonoNanos() - t0);
  }
  shutdown(pair.client.get(), SHUT_RDWR);
  echo.join();
  if (!ok) return Status::FromErrno(errno, "loopback TCP ping-pong");
  return h;
}

Result<LogHistogram> MeasureMsync(const std::string& dir, size_t size, int rounds) {
  const long page_size = sysconf(_SC_PAGESIZE);
  const auto page = static_cast<size_t>(page_size > 0 ? page_size : 4096);
  const size_t step = std::max<size_t>(size, 1);
  const size_t file_size =
      std::max<size_t>(size_t{1} << 20, (step * (static_cast<size_t>(rounds) + 1) + page - 1) / page * page);
  std::string path = (std::filesystem::path(dir) / "rdmq-bench-msync-XXXXXX").string();
  Fd fd(mkstemp(path.data()));
  if (fd.get() < 0) return Status::FromErrno(errno, "create a file in " + dir + " for the msync limit");
  unlink(path.c_str());
  if (const int e = posix_fallocate(fd.get(), 0, static_cast<off_t>(file_size)); e != 0) {
    return Status::FromErrno(e, "allocate " + std::to_string(file_size) + " bytes in " + dir);
  }
  if (fsync(fd.get()) != 0) return Status::FromErrno(errno, "fsync " + path);
  void* m = mmap(nullptr, file_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (m == MAP_FAILED) return Status::FromErrno(errno, "mmap " + path);
  auto* base = static_cast<char*>(m);
  std::vector<char> record(step, 'm');
  LogHistogram h;
  Status failed;
  size_t at = 0;
  for (int i = -rounds / 10; i < rounds; ++i, at += step) {
    if (at + step > file_size) at = 0;
    const uint64_t t0 = MonoNanos();
    std::memcpy(base + at, record.data(), step);
    const size_t first = at / page * page;
    if (msync(base + first, at + step - first, MS_SYNC) != 0) {
      failed = Status::FromErrno(errno, "msync " + path);
      break;
    }
    if (i >= 0) h.Record(MonoNanos() - t0);
  }
  munmap(m, file_size);
  if (!failed.ok()) return failed;
  return h;
}

Result<double> MeasureMsyncBandwidth(const std::string& dir, int rounds) {
  constexpr size_t kChunk = size_t{1} << 20;
  RDMQ_ASSIGN_OR_RETURN(const LogHistogram h, MeasureMsync(dir, kChunk, rounds));
  return h.mean() > 0 ? static_cast<double>(kChunk) / h.mean() : 0.0;  // bytes per ns = GB/s
}

Result<FreshPages> MeasureFreshPages(const std::string& dir, uint64_t bytes) {
  constexpr size_t kChunk = size_t{1} << 20;
  bytes = std::max<uint64_t>(bytes / kChunk * kChunk, kChunk);
  std::string path = (std::filesystem::path(dir) / "rdmq-bench-fresh-XXXXXX").string();
  Fd fd(mkstemp(path.data()));
  if (fd.get() < 0) return Status::FromErrno(errno, "create a file in " + dir + " for the fresh-page limit");
  unlink(path.c_str());
  if (const int e = posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes)); e != 0) {
    return Status::FromErrno(e, "allocate " + std::to_string(bytes) + " bytes in " + dir);
  }
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (m == MAP_FAILED) return Status::FromErrno(errno, "mmap " + path);
  auto* base = static_cast<char*>(m);
  const std::vector<char> chunk(kChunk, 'f');
  FreshPages f;
  f.bytes = bytes;
  const uint64_t start = MonoNanos();
  uint64_t worst = 0;
  for (uint64_t at = 0; at < bytes; at += kChunk) {
    const uint64_t t0 = MonoNanos();
    std::memcpy(base + at, chunk.data(), kChunk);
    worst = std::max(worst, MonoNanos() - t0);
  }
  const uint64_t took = std::max<uint64_t>(MonoNanos() - start, 1);
  munmap(m, bytes);
  f.gb_s = static_cast<double>(bytes) / static_cast<double>(took);  // bytes per ns = GB/s
  f.worst_ms = static_cast<double>(worst) / 1e6;
  return f;
}

std::string FileSystemName(const std::string& dir) {
  struct statfs st {};
  if (statfs(dir.c_str(), &st) != 0) return "unknown";
  switch (static_cast<unsigned long>(st.f_type)) {
    case EXT4_SUPER_MAGIC:
      return "ext2/3/4";
    case TMPFS_MAGIC:
      return "tmpfs";
    case XFS_SUPER_MAGIC:
      return "xfs";
    case BTRFS_SUPER_MAGIC:
      return "btrfs";
    case OVERLAYFS_SUPER_MAGIC:
      return "overlayfs";
    default: {
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%lx", static_cast<unsigned long>(st.f_type));
      return hex;
    }
  }
}

int64_t ReadAheadKb(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return -1;
  const std::string dev =
      "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  // A partition has no queue of its own: its disk's is one level up.
  for (const char* q : {"/queue/read_ahead_kb", "/../queue/read_ahead_kb"}) {
    std::ifstream in(dev + q);
    int64_t kb = -1;
    if (in >> kb) return kb;
  }
  return -1;
}

Result<Limits> MeasureLimits(bool quick, const std::string& msync_dir) {
  Limits l;
  const auto t = std::chrono::milliseconds(quick ? 300 : 1500);
  l.memcpy_1mib_gb_s = MeasureMemcpy(1u << 20, t);
  l.memcpy_64mib_gb_s = MeasureMemcpy(64u << 20, t);
  RDMQ_ASSIGN_OR_RETURN(l.tcp_gb_s, MeasureTcpBandwidth(t));
  RDMQ_ASSIGN_OR_RETURN(l.tcp_rtt_100b, MeasureTcpRoundTrip(100, quick ? 5000 : 50000));
  l.msync_dir = msync_dir.empty() ? std::filesystem::temp_directory_path().string() : msync_dir;
  RDMQ_ASSIGN_OR_RETURN(l.msync_100b, MeasureMsync(l.msync_dir, 100, quick ? 200 : 2000));
  RDMQ_ASSIGN_OR_RETURN(l.msync_1mib_gb_s, MeasureMsyncBandwidth(l.msync_dir, quick ? 16 : 128));
  l.msync_dir_fs = FileSystemName(l.msync_dir);
  l.read_ahead_kb = ReadAheadKb(l.msync_dir);
  RDMQ_ASSIGN_OR_RETURN(l.fresh, MeasureFreshPages(l.msync_dir, uint64_t{quick ? 16u : 256u} << 20));
  return l;
}

nlohmann::json LimitsJson(const Limits& l) {
  return {{"memcpy_1mib_gb_s", l.memcpy_1mib_gb_s},
          {"memcpy_64mib_gb_s", l.memcpy_64mib_gb_s},
          {"tcp_loopback_gb_s", l.tcp_gb_s},
          {"tcp_rtt_100b_ns", HistogramJson(l.tcp_rtt_100b)},
          {"msync_100b_ns", HistogramJson(l.msync_100b)},
          {"msync_1mib_gb_s", l.msync_1mib_gb_s},
          {"msync_dir", l.msync_dir},
          {"msync_dir_fs", l.msync_dir_fs},
          {"read_ahead_kb", l.read_ahead_kb},
          {"fresh_pages_gb_s", l.fresh.gb_s},
          {"fresh_pages_worst_1mib_ms", l.fresh.worst_ms},
          {"fresh_pages_bytes", l.fresh.bytes}};
}

void PrintLimits(const Limits& l, std::FILE* out) {
  std::fprintf(out, "memcpy 1 MiB        %6.2f GB/s\n", l.memcpy_1mib_gb_s);
  std::fprintf(out, "memcpy 64 MiB       %6.2f GB/s\n", l.memcpy_64mib_gb_s);
  std::fprintf(out, "TCP loopback        %6.2f GB/s (one stream, 1 MiB writes)\n", l.tcp_gb_s);
  std::fprintf(out, "TCP 100 B RTT       p50 %.1f us, p99 %.1f us, p99.9 %.1f us (%llu round trips)\n",
               static_cast<double>(l.tcp_rtt_100b.Percentile(50)) / 1e3,
               static_cast<double>(l.tcp_rtt_100b.Percentile(99)) / 1e3,
               static_cast<double>(l.tcp_rtt_100b.Percentile(99.9)) / 1e3,
               static_cast<unsigned long long>(l.tcp_rtt_100b.count()));
  std::fprintf(out, "msync 100 B         p50 %.1f us, p99 %.1f us, p99.9 %.1f us (%llu commits in %s)\n",
               static_cast<double>(l.msync_100b.Percentile(50)) / 1e3,
               static_cast<double>(l.msync_100b.Percentile(99)) / 1e3,
               static_cast<double>(l.msync_100b.Percentile(99.9)) / 1e3,
               static_cast<unsigned long long>(l.msync_100b.count()), l.msync_dir.c_str());
  std::fprintf(out, "msync 1 MiB writes  %6.2f GB/s (each 1 MiB written, then msync)\n", l.msync_1mib_gb_s);
  std::fprintf(out,
               "fresh pages         %6.2f GB/s, slowest 1 MiB write %.2f ms (first writes into a fresh %llu "
               "MiB file)\n",
               l.fresh.gb_s, l.fresh.worst_ms, static_cast<unsigned long long>(l.fresh.bytes >> 20));
  if (l.read_ahead_kb >= 0) {
    std::fprintf(out, "data directory      %s (%s, device read-ahead %lld KiB)\n", l.msync_dir.c_str(),
                 l.msync_dir_fs.c_str(), static_cast<long long>(l.read_ahead_kb));
  } else {
    std::fprintf(out, "data directory      %s (%s, no block device)\n", l.msync_dir.c_str(),
                 l.msync_dir_fs.c_str());
  }
}

}  // namespace rdmq::bench
