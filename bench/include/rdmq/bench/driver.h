// The workload driver: runs producers and consumers (threads, or forked processes) against one
// System and measures what the report shows.
//
//   Workload w; w.system = "redis"; w.message_size = 1024; w.count = 100000;
//   auto sys = MakeSystem(w);
//   RunOptions opts; opts.progress = ProgressMode::kAuto;
//   Result<Report> r = RunBenchmark(w, **sys, opts);
//
// What is measured:
// - produce throughput: records acknowledged / time from the start signal to the last ack;
// - consume throughput: records consumed / time from the start signal to the last record read;
// - produce-to-ack latency: ack time - send time, per timed record;
// - produce-to-consume latency: time the consumer got the record - send time, per timed record
//   (the time is taken once per batch a consumer poll returns);
// Timed records: every record, or a pseudo-random 1 in N (RunOptions::latency_sample), so that
// the clock is not read twice for every record of a fast run; the others carry send time 0 and
// are checked like the rest. The report says which N it used.
// - CPU time (user, sys) of the server process (/proc/<pid>/stat) and of the client processes
//   (getrusage), between the start signal and the end;
// - throughput over time, sampled every `sample_interval`.
// Consumers verify each record's header: per producer and partition the sequence numbers must
// arrive in order, without gaps or repeats; the report counts what did not.
//
// Threading: RunBenchmark blocks; it starts and joins (or waits for) every worker itself.
// SIGINT/SIGTERM during a run stop it early (the handlers are installed for the run's length
// and restored after); the report then says `interrupted`.
// Errors: a client that fails to open, send or poll makes the run fail with that client's
// error (named by role and index); what was measured until then is lost.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "rdmq/bench/histogram.h"
#include "rdmq/bench/system.h"
#include "rdmq/common/status.h"

namespace rdmq::bench {

inline constexpr int kMaxWorkers = 64;  // producers, and separately consumers
inline constexpr int kMaxPartitions = 1024;

enum class ProgressMode { kAuto, kTty, kPlain, kNone };

struct RunOptions {
  ProgressMode progress = ProgressMode::kAuto;
  std::chrono::milliseconds sample_interval{100};
  // How long consumers may take, after the producers are done, to read everything.
  std::chrono::milliseconds drain_timeout{30000};
  // Whose CPU time is "the broker's": 0 = what the System reports (System::ServerPid).
  int server_pid = 0;
  // Latencies are measured on 1 record in N, picked pseudo-randomly; 0 = automatic: every
  // record when the run is paced (--rate, which reads the clock per record anyway) or has at
  // most kAutoSampleWindow records in flight, else 1 in kAutoSample.
  uint32_t latency_sample = 0;
};

inline constexpr uint32_t kAutoSample = 16;
inline constexpr uint32_t kAutoSampleWindow = 64;

// The N of RunOptions::latency_sample that a run of `w` uses.
uint32_t EffectiveLatencySample(const Workload& w, const RunOptions& options);

// Whether a record is timed, 1 in `every` (pseudo-random, xorshift; a few instructions, no
// state shared between workers). every <= 1: every record.
class LatencySampler {
 public:
  LatencySampler(uint32_t every, uint64_t seed) : every_(every), state_(seed | 1) {}
  bool Next() noexcept {
    if (every_ <= 1) return true;
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return ((state_ >> 32) * every_ >> 32) == 0;
  }

 private:
  uint64_t every_;
  uint64_t state_;
};

struct CpuTime {
  double user_s = 0;
  double sys_s = 0;
  double total() const { return user_s + sys_s; }
};

struct Sample {
  double t_s = 0;           // since the start signal
  uint64_t acked = 0;       // cumulative, all producers
  uint64_t consumed = 0;    // cumulative, all consumers
  double produce_rate = 0;  // records/s over the last interval
  double consume_rate = 0;
};

struct Report {
  Workload workload;
  std::string system_description;
  // Counts.
  uint64_t sent = 0;
  uint64_t acked = 0;
  uint64_t ack_errors = 0;
  uint64_t consumed = 0;
  uint64_t expected = 0;    // what consumers should have read (records sent to their partitions)
  uint64_t missing = 0;     // sequence gaps plus what never arrived
  uint64_t duplicates = 0;  // repeated or reordered sequence numbers
  uint64_t corrupt = 0;     // payloads without a valid header
  // Times, seconds from the start signal.
  double produce_s = 0;
  double consume_s = 0;  // with fanout, from when the consumers began reading
  // Each consumer's own rate (records it read / the time from its first poll to its last
  // record), in consumer order.
  std::vector<double> consumer_records_per_s;
  double elapsed_s = 0;
  // Latencies in nanoseconds, of 1 record in latency_sample_every.
  LogHistogram ack_latency;
  LogHistogram e2e_latency;
  uint32_t latency_sample_every = 1;
  // The harness's reference: mem's rates for the same workload in the same invocation
  // (rdmq-bench --vs-mem), 0 when it was not run.
  double mem_produce_records_per_s = 0;
  double mem_consume_records_per_s = 0;
  // CPU.
  int server_pid = 0;
  bool server_cpu_known = false;
  CpuTime server_cpu;
  CpuTime client_cpu;                   // all client threads/processes together
  double client_max_process_cores = 0;  // the busiest client process: CPU s / its running s
  // Process mode: the busiest producer and consumer process (-1 in thread mode, where producers
  // and consumers share one process).
  double producer_max_process_cores = -1;
  double consumer_max_process_cores = -1;
  std::vector<Sample> timeline;
  std::array<double, 3> load_before{};  // /proc/loadavg at the start and at the end
  std::array<double, 3> load_after{};
  bool interrupted = false;
  int interrupt_signal = 0;  // SIGINT / SIGTERM that stopped the run
  std::string first_error;   // first ack error, for the summary

  double produce_records_per_s() const { return produce_s > 0 ? static_cast<double>(acked) / produce_s : 0; }
  double produce_mb_per_s() const { return produce_records_per_s() * workload.message_size / 1e6; }
  double consume_records_per_s() const {
    return consume_s > 0 ? static_cast<double>(consumed) / consume_s : 0;
  }
  double consume_mb_per_s() const { return consume_records_per_s() * workload.message_size / 1e6; }
  // Every record acknowledged, nothing lost, duplicated or corrupt, consumers got all.
  bool CountsOk() const;
};

// Checks a workload for values the driver cannot run (too many workers, message smaller than
// the payload header, neither count nor duration, exclusive mode with more producers than
// partitions, ...). kInvalidArgument naming the option.
Status ValidateWorkload(const Workload& w);

// Partitions producer `index` writes to, round robin, record k to result[k % size].
std::vector<int> ProducerPartitions(const Workload& w, int index);
// Partitions consumer `index` reads (partition p belongs to consumer p % consumers).
std::vector<int> ConsumerPartitions(const Workload& w, int index);

Result<Report> RunBenchmark(const Workload& workload, System& system, const RunOptions& options);

// The SIGINT/SIGTERM that arrived during a RunBenchmark call of this process (0 if none), so
// the caller can die of it once its outputs are written, as shells expect.
int InterruptSignal();

}  // namespace rdmq::bench
