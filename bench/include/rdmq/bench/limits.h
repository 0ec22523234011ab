// Physical limits of this machine, measured in the same run as the brokers so that every broker
// figure can be read against them: memcpy bandwidth (1 MiB buffers, which stay in cache, and
// 64 MiB, which do not), loopback TCP bandwidth (one stream, 1 MiB writes) and loopback TCP
// round-trip latency with 100-byte messages (TCP_NODELAY, one in flight), and the latency of
// making one small write to a mapped file durable (msync, as a durable topic's commit does) and
// the bandwidth of making 1 MiB writes durable (what a durable topic's log can take when its
// producers send 1 MiB batches, as the benchmarks' throughput runs do), in the directory a
// broker's data would be in; there too, how fast a fresh allocated file takes its first writes
// through a shared mapping (what a producer's first pass over a new log segment costs: the
// kernel makes each page on its first touch) and the slowest single write of that pass.
//
// Threading: each function runs its own threads and joins them. Errors: socket failures with
// the call and errno.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "rdmq/bench/histogram.h"
#include "rdmq/common/status.h"

namespace rdmq::bench {

// First writes into a fresh, allocated file through a shared mapping, 1 MiB memcpys in order.
struct FreshPages {
  double gb_s = 0;      // bytes over the whole pass
  double worst_ms = 0;  // the slowest 1 MiB write
  uint64_t bytes = 0;   // the file's size
};

struct Limits {
  double memcpy_1mib_gb_s = 0;
  double memcpy_64mib_gb_s = 0;
  double tcp_gb_s = 0;
  LogHistogram tcp_rtt_100b;   // nanoseconds
  LogHistogram msync_100b;     // nanoseconds
  double msync_1mib_gb_s = 0;  // 1 MiB written and msynced at a time, one after another
  std::string msync_dir;       // where the msync limits were measured
  std::string msync_dir_fs;    // its file system (statfs type name, or "0x..." when not known)
  int64_t read_ahead_kb = -1;  // its block device's read-ahead (-1: no block device)
  FreshPages fresh;            // first writes into a fresh file there
};

// Copies `bytes` between two buffers repeatedly for about `time`; GB/s (1e9 bytes/s) of the best
// of three rounds.
double MeasureMemcpy(size_t bytes, std::chrono::milliseconds time);
// One client thread writing 1 MiB chunks to a server thread reading them over 127.0.0.1.
Result<double> MeasureTcpBandwidth(std::chrono::milliseconds time);
// Ping-pong of `size`-byte messages over 127.0.0.1, `rounds` times (after a warm-up).
Result<LogHistogram> MeasureTcpRoundTrip(size_t size, int rounds);

// In a fresh file in `dir` (deleted after), mapped shared: `size` bytes written at the next
// offset, then msync(MS_SYNC) of the page(s) they touched, `rounds` times, each timed; the bare
// cost of a durable commit of that many bytes, without a broker.
Result<LogHistogram> MeasureMsync(const std::string& dir, size_t size, int rounds);
// GB/s of MeasureMsync with 1 MiB writes, `rounds` of them: durable bytes over the time taken.
Result<double> MeasureMsyncBandwidth(const std::string& dir, int rounds);

// A fresh `bytes`-byte file in `dir` (allocated with posix_fallocate, as a broker's segments are;
// deleted after), mapped shared and written once in 1 MiB memcpys.
Result<FreshPages> MeasureFreshPages(const std::string& dir, uint64_t bytes);
// The file system type name of `dir` and its block device's read-ahead in KiB (-1 when it has
// none, as tmpfs).
std::string FileSystemName(const std::string& dir);
int64_t ReadAheadKb(const std::string& dir);

// All of the above (msync in `msync_dir`; empty: the temporary directory, where rdmq-bench
// --start-broker puts its broker's data); `quick` shortens every measurement.
Result<Limits> MeasureLimits(bool quick, const std::string& msync_dir = "");
nlohmann::json LimitsJson(const Limits& l);
void PrintLimits(const Limits& l, std::FILE* out);

}  // namespace rdmq::bench
