// The workload driver. Every worker (producer or consumer, thread or forked process) reports
// through a slot in one MAP_SHARED block, so the thread and the process modes share all code:
// the main process samples the slots for the progress line and the timeline, and merges the
// slots' histograms at the end.
#include "rdmq/bench/driver.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <new>
#include <thread>

#include "progress.h"
#include "rdmq/bench/sysinfo.h"
#include "rdmq/common/clock.h"

namespace rdmq::bench {
namespace {

enum WorkerState : int { kInit = 0, kReady = 1, kDone = 2, kFailed = 3 };
enum Phase : int { kPhaseSetup = 0, kPhaseOpen = 1, kPhaseRun = 2 };

// One producer's or consumer's results. Written by its worker only (the counters are atomic so
// the main process may sample them while the run goes on).
struct alignas(64) WorkerSlot {
  std::atomic<uint64_t> sent{0};       // producers: records handed to Send
  std::atomic<uint64_t> completed{0};  // producers: acks; consumers: records read
  std::atomic<uint64_t> errors{0};     // producers: failed acks
  std::atomic<uint64_t> last_ns{0};    // time of the last ack / record read
  std::atomic<uint64_t> begin_ns{0};   // consumers: when they began reading
  std::atomic<int> state{kInit};
  uint64_t expected = 0;  // consumers: records sent to their partitions
  uint64_t missing = 0;
  uint64_t duplicates = 0;
  uint64_t corrupt = 0;
  double cpu_user = 0, cpu_sys = 0;  // process mode: the worker process's CPU during the run
  double run_s = 0;                  // process mode: how long the worker ran
  char error[512] = {};
  LogHistogram hist;  // ack latency (producers) / produce-to-consume (consumers)
};

struct Shared {
  std::atomic<int> phase{kPhaseSetup};
  std::atomic<int> stop{0};  // stop now: interrupted or a worker failed
  std::atomic<int> interrupted{0};
  std::atomic<int> targets_ready{0};  // partition_sent is final (every producer flushed)
  uint64_t start_ns = 0;
  uint64_t deadline_ns = 0;     // duration mode
  uint32_t latency_sample = 1;  // producers time 1 record in this many
  std::atomic<uint64_t> partition_sent[kMaxPartitions];
  WorkerSlot producers[kMaxWorkers];
  WorkerSlot consumers[kMaxWorkers];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "the counters are shared between processes");

// The block of the current run, for the signal handler.
std::atomic<Shared*> g_shared{nullptr};
std::atomic<int> g_signal{0};

void OnSignal(int signo) {
  g_signal.store(signo);
  if (Shared* s = g_shared.load()) {
    s->interrupted.store(signo);
    s->stop.store(1);
  }
}

void SetError(WorkerSlot& slot, const std::string& what, const Status& s) {
  std::snprintf(slot.error, sizeof(slot.error), "%s: %s", what.c_str(), s.ToString().c_str());
}

// Measures a worker's CPU time and running time from construction to Stop(); in process mode
// that is the worker process's share (in thread mode the driver measures the whole process).
class WorkerClock {
 public:
  WorkerClock() : cpu0_(SelfCpu()), t0_(MonoNanos()) {}
  void Stop(WorkerSlot& slot) const {
    const CpuTime cpu1 = SelfCpu();
    slot.cpu_user = cpu1.user_s - cpu0_.user_s;
    slot.cpu_sys = cpu1.sys_s - cpu0_.sys_s;
    slot.run_s = static_cast<double>(MonoNanos() - t0_) / 1e9;
  }

 private:
  CpuTime cpu0_;
  uint64_t t0_;
};

bool StopRequested(const Shared& sh) { return sh.stop.load(std::memory_order_relaxed) != 0; }

// Waits until the phase reaches `phase`; false if the run is stopped first.
bool AwaitPhase(const Shared& sh, int phase) {
  while (sh.phase.load(std::memory_order_acquire) < phase) {
    if (StopRequested(sh)) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return !StopRequested(sh);
}

// A worker waits for `phase`; when the run is called off first it marks its slot done.
bool EnterPhase(const Shared& sh, WorkerSlot& slot, int phase) {
  if (AwaitPhase(sh, phase)) return true;
  slot.state.store(kDone);
  return false;
}

// A worker that could not open its client records why and gives up.
void OpenFailed(WorkerSlot& slot, const std::string& what, const Status& why) {
  SetError(slot, what, why);
  slot.state.store(kFailed, std::memory_order_release);
}

// ----------------------------------------------------------------------------- producers

// Counts acks and times those of timed records (tag = send time, 0 = untimed). The clock is
// read only for a timed record, an error, a group of acks, or the ack of the last record sent
// so far, so last_ns (where the produce phase ends) stays exact without a reading per ack.
class ProducerAcks final : public AckSink {
 public:
  explicit ProducerAcks(WorkerSlot& slot) : slot_(slot) {}
  void OnAck(uint64_t tag, const Status& status) override {
    if (tag == 0 && status.ok() && acked_ + 1 != slot_.sent.load(std::memory_order_relaxed)) {
      slot_.completed.store(++acked_, std::memory_order_release);
      return;
    }
    const uint64_t now = MonoNanos();
    if (!status.ok()) {
      if (slot_.errors.fetch_add(1, std::memory_order_relaxed) == 0) SetError(slot_, "ack", status);
    } else if (tag != 0) {
      slot_.hist.Record(now >= tag ? now - tag : 0);
    }
    slot_.last_ns.store(now, std::memory_order_relaxed);
    slot_.completed.store(++acked_, std::memory_order_release);
  }
  void OnAcks(std::span<const uint64_t> tags, const Status& status) override {
    if (tags.empty()) return;
    if (!status.ok()) {
      for (uint64_t tag : tags) OnAck(tag, status);
      return;
    }
    const uint64_t now = MonoNanos();
    for (uint64_t tag : tags) {
      if (tag != 0) slot_.hist.Record(now >= tag ? now - tag : 0);
    }
    acked_ += tags.size();
    slot_.last_ns.store(now, std::memory_order_relaxed);
    slot_.completed.store(acked_, std::memory_order_release);
  }

 private:
  WorkerSlot& slot_;
  uint64_t acked_ = 0;
};

void RunProducer(const Workload& w, System& system, Shared& sh, int index) {
  WorkerSlot& slot = sh.producers[index];
  if (!EnterPhase(sh, slot, kPhaseOpen)) return;
  ProducerAcks acks(slot);
  auto client = system.OpenProducer(index, &acks);
  if (!client.ok()) return OpenFailed(slot, "open producer " + std::to_string(index), client.status());
  const std::vector<int> parts = ProducerPartitions(w, index);
  std::vector<uint64_t> per_partition(parts.size(), 0);
  std::vector<std::byte> payload(w.message_size);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>('a' + i % 26);
  slot.state.store(kReady, std::memory_order_release);
  if (!EnterPhase(sh, slot, kPhaseRun)) return;

  const WorkerClock clock;
  Status failure;
  uint64_t seq = 0;
  size_t part_index = 0;
  const uint64_t window = std::max<uint32_t>(1, w.window);
  const uint64_t deadline = sh.deadline_ns;
  LatencySampler sampler(sh.latency_sample, 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(index + 1));
  // Paced mode: record k is due at start + k * interval; the producer sleeps until shortly
  // before it (so consumers and the server have the CPU meanwhile) and spins the rest.
  const uint64_t interval_ns = w.rate > 0 ? static_cast<uint64_t>(1e9 / w.rate) : 0;
  uint64_t due_ns = MonoNanos();
  for (;;) {
    if (w.count != 0 && seq == w.count) break;
    if (StopRequested(sh)) break;
    while (seq - slot.completed.load(std::memory_order_acquire) >= window) {
      failure = (*client)->Poll(std::chrono::microseconds(1000));
      if (!failure.ok() || StopRequested(sh)) break;
    }
    if (!failure.ok() || StopRequested(sh)) break;
    if (interval_ns != 0) {
      due_ns += interval_ns;
      for (uint64_t now = MonoNanos(); now < due_ns; now = MonoNanos()) {
        if (due_ns - now > 60'000) {
          std::this_thread::sleep_for(std::chrono::nanoseconds(due_ns - now - 50'000));
          // Collect acks that came in meanwhile, so they are timed when they arrived.
          failure = (*client)->Poll(std::chrono::microseconds(0));
          if (!failure.ok() || StopRequested(sh)) break;
        }
      }
      if (!failure.ok() || StopRequested(sh)) break;
    }
    // The clock is read for a timed record, and in duration mode every 64th record for the
    // deadline (at most 63 records late).
    const bool timed = sampler.Next();
    const uint64_t now = timed || (deadline != 0 && (seq & 63) == 0) ? MonoNanos() : 0;
    if (deadline != 0 && now >= deadline) break;
    const PayloadHeader h{timed ? now : 0, PayloadHeader::MakeId(static_cast<uint32_t>(index), seq)};
    std::memcpy(payload.data(), &h, sizeof(h));
    slot.sent.store(seq + 1, std::memory_order_relaxed);
    failure = (*client)->Send(parts[part_index], payload, h.send_ns);
    if (!failure.ok()) break;
    ++per_partition[part_index];
    ++seq;
    // Collect acks now and then without waiting, so they are timed when they arrive rather
    // than when the window next fills up.
    if ((seq & 63) == 0) {
      failure = (*client)->Poll(std::chrono::microseconds(0));
      if (!failure.ok()) break;
    }
    if (++part_index == parts.size()) part_index = 0;
  }
  if (failure.ok()) {
    // When the run is being stopped (Ctrl-C, another worker failed), do not wait long for the
    // outstanding acks: the server may be the thing that went away.
    failure = (*client)->Flush(std::chrono::milliseconds(StopRequested(sh) ? 2000 : 120000));
    if (StopRequested(sh)) failure = Status::Ok();
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    sh.partition_sent[parts[i]].fetch_add(per_partition[i], std::memory_order_relaxed);
  }
  clock.Stop(slot);
  client->reset();
  if (!failure.ok() && !StopRequested(sh)) {
    SetError(slot, "producer " + std::to_string(index), failure);
    slot.state.store(kFailed, std::memory_order_release);
    return;
  }
  slot.state.store(kDone, std::memory_order_release);
}

// ----------------------------------------------------------------------------- consumers

class ConsumerRecords final : public RecordSink {
 public:
  ConsumerRecords(const Workload& w, WorkerSlot& slot) : slot_(slot), producers_(w.producers) {
    // next_[partition * producers + producer]: the sequence number expected next from that
    // producer on that partition (a batch's partition picks one row); stride_[producer]: how
    // many partitions it cycles over.
    const size_t np = static_cast<size_t>(w.partitions);
    const size_t nprod = static_cast<size_t>(w.producers);
    next_.assign(nprod * np, kNotMine);
    stride_.resize(nprod);
    for (int p = 0; p < w.producers; ++p) {
      const std::vector<int> parts = ProducerPartitions(w, p);
      stride_[static_cast<size_t>(p)] = parts.size();
      for (size_t j = 0; j < parts.size(); ++j)
        next_[static_cast<size_t>(parts[j]) * nprod + static_cast<size_t>(p)] = j;
    }
    partitions_ = np;
    per_partition_.assign(np, 0);
  }

  void OnRecords(int partition, std::span<const std::span<const std::byte>> records) override {
    const uint64_t now = MonoNanos();
    if (partition < 0 || static_cast<size_t>(partition) >= partitions_) {
      slot_.corrupt += records.size();
    } else {
      Check(static_cast<size_t>(partition), records, now);
      per_partition_[static_cast<size_t>(partition)] += records.size();
    }
    consumed_ += records.size();
    slot_.last_ns.store(now, std::memory_order_relaxed);
    slot_.completed.store(consumed_, std::memory_order_release);
  }

  uint64_t consumed_from(int partition) const { return per_partition_[static_cast<size_t>(partition)]; }

 private:
  static constexpr uint64_t kNotMine = ~uint64_t{0};

  // Every record's header: a producer that writes to this partition, its next sequence number;
  // timed records (send time != 0) also go into the latency histogram.
  void Check(size_t partition, std::span<const std::span<const std::byte>> records, uint64_t now) {
    uint64_t* const next_of = &next_[partition * static_cast<size_t>(producers_)];
    for (const auto& r : records) {
      PayloadHeader h;
      if (!ReadPayloadHeader(r, &h) || h.producer() >= static_cast<uint32_t>(producers_)) {
        ++slot_.corrupt;
        continue;
      }
      uint64_t& next = next_of[h.producer()];
      if (next == kNotMine) {  // this producer never writes to this partition
        ++slot_.corrupt;
        continue;
      }
      if (h.send_ns != 0) slot_.hist.Record(now >= h.send_ns ? now - h.send_ns : 0);
      const uint64_t stride = stride_[h.producer()];
      if (h.seq() == next) {
        next += stride;
      } else if (h.seq() > next) {
        slot_.missing += (h.seq() - next) / stride;
        next = h.seq() + stride;
      } else {
        ++slot_.duplicates;
      }
    }
  }

  WorkerSlot& slot_;
  int producers_;
  size_t partitions_ = 0;
  std::vector<uint64_t> next_;
  std::vector<uint64_t> stride_;
  std::vector<uint64_t> per_partition_;
  uint64_t consumed_ = 0;
};

void RunConsumer(const Workload& w, System& system, Shared& sh, int index) {
  WorkerSlot& slot = sh.consumers[index];
  if (!EnterPhase(sh, slot, kPhaseOpen)) return;
  const std::vector<int> parts = ConsumerPartitions(w, index);
  ConsumerRecords sink(w, slot);
  auto client = system.OpenConsumer(index, parts, &sink);
  if (!client.ok()) return OpenFailed(slot, "open consumer " + std::to_string(index), client.status());
  slot.state.store(kReady, std::memory_order_release);
  if (!EnterPhase(sh, slot, kPhaseRun)) return;
  const WorkerClock clock;
  Status failure;
  // Fan-out: every consumer starts reading the whole log once it is all written.
  while (w.fanout && !StopRequested(sh) && !sh.targets_ready.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  slot.begin_ns.store(MonoNanos(), std::memory_order_relaxed);
  while (!StopRequested(sh)) {
    if (sh.targets_ready.load(std::memory_order_acquire)) {
      bool all = true;
      for (int p : parts)
        all = all && sink.consumed_from(p) >= sh.partition_sent[p].load(std::memory_order_relaxed);
      if (all) break;
    }
    failure = (*client)->Poll(std::chrono::milliseconds(20));
    if (!failure.ok()) break;
  }
  clock.Stop(slot);
  client->reset();
  for (int p : parts) slot.expected += sh.partition_sent[p].load(std::memory_order_relaxed);
  if (!failure.ok() && !StopRequested(sh)) {
    SetError(slot, "consumer " + std::to_string(index), failure);
    slot.state.store(kFailed, std::memory_order_release);
    return;
  }
  slot.state.store(kDone, std::memory_order_release);
}

// ----------------------------------------------------------------------------- workers

// Runs `fn` in a thread or in a forked child; Join() waits for either.
class Workers {
 public:
  explicit Workers(bool processes) : processes_(processes) {}
  ~Workers() { Join(); }

  template <class Fn>
  Status Start(const WorkerSlot& slot, Fn fn) {
    if (!processes_) {
      threads_.emplace_back(fn);
      return Status::Ok();
    }
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return Status::FromErrno(errno, "fork a benchmark worker");
    if (pid == 0) {
      fn();
      std::fflush(nullptr);
      _exit(slot.state.load() == kFailed ? 1 : 0);
    }
    pids_.push_back(pid);
    return Status::Ok();
  }

  // Process mode: a description of worker processes that ended by a signal so far ("" if none).
  std::string Died() {
    for (size_t i = 0; i < pids_.size(); ++i) {
      int status = 0;
      if (pids_[i] > 0 && waitpid(pids_[i], &status, WNOHANG) == pids_[i]) {
        if (WIFSIGNALED(status)) {
          died_ += "worker process " + std::to_string(pids_[i]) + " killed by signal " +
                   std::to_string(WTERMSIG(status)) + "; ";
        }
        pids_[i] = -1;  // reaped
      }
    }
    return died_;
  }

  // Waits for every worker; returns a description of children that died abnormally.
  std::string Join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
    for (pid_t pid : pids_) {
      if (pid <= 0) continue;
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (WIFSIGNALED(status)) {
        died_ += "worker process " + std::to_string(pid) + " killed by signal " +
                 std::to_string(WTERMSIG(status)) + "; ";
      }
    }
    pids_.clear();
    return died_;
  }

 private:
  bool processes_;
  std::vector<std::thread> threads_;
  std::vector<pid_t> pids_;
  std::string died_;
};

// The shared block: anonymous MAP_SHARED memory, so forked workers write into the same pages.
class SharedBlock {
 public:
  SharedBlock() {
    void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) shared_ = new (p) Shared();
  }
  ~SharedBlock() {
    if (shared_ != nullptr) {
      shared_->~Shared();
      munmap(shared_, sizeof(Shared));
    }
  }
  SharedBlock(const SharedBlock&) = delete;
  SharedBlock& operator=(const SharedBlock&) = delete;
  Shared* get() const { return shared_; }

 private:
  Shared* shared_ = nullptr;
};

// Installs SIGINT/SIGTERM handlers that stop the run, and restores the old ones.
class SignalScope {
 public:
  explicit SignalScope(Shared* sh) {
    g_shared.store(sh);
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    g_shared.store(nullptr);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

int CountState(const WorkerSlot* slots, int n, int state) {
  int k = 0;
  for (int i = 0; i < n; ++i) k += slots[i].state.load(std::memory_order_acquire) == state;
  return k;
}

std::string FirstError(const Shared& sh, const Workload& w) {
  for (int i = 0; i < w.producers; ++i) {
    if (sh.producers[i].state.load() == kFailed) return sh.producers[i].error;
  }
  for (int i = 0; i < w.consumers; ++i) {
    if (sh.consumers[i].state.load() == kFailed) return sh.consumers[i].error;
  }
  return "";
}

}  // namespace

int InterruptSignal() { return g_signal.load(); }

bool Report::CountsOk() const {
  if (interrupted || ack_errors != 0 || acked != sent || sent == 0) return false;
  if (workload.consumers == 0) return true;
  return missing == 0 && duplicates == 0 && corrupt == 0 && consumed == expected;
}

Status ValidateWorkload(const Workload& w) {
  auto bad = [](const std::string& msg) { return Status(Errc::kInvalidArgument, msg); };
  if (w.producers < 1 || w.producers > kMaxWorkers) {
    return bad("--producers must be 1.." + std::to_string(kMaxWorkers) + ", not " +
               std::to_string(w.producers));
  }
  if (w.consumers < 0 || w.consumers > kMaxWorkers) {
    return bad("--consumers must be 0.." + std::to_string(kMaxWorkers) + ", not " +
               std::to_string(w.consumers));
  }
  if (w.partitions < 1 || w.partitions > kMaxPartitions) {
    return bad("--partitions must be 1.." + std::to_string(kMaxPartitions) + ", not " +
               std::to_string(w.partitions));
  }
  if (w.message_size < kPayloadHeaderBytes) {
    return bad("--size must be at least " + std::to_string(kPayloadHeaderBytes) +
               " bytes (the send time and sequence number the driver writes into every record), not " +
               std::to_string(w.message_size));
  }
  if ((w.count == 0) == (w.duration.count() == 0)) return bad("give exactly one of --count and --duration");
  if (w.count >= (uint64_t{1} << PayloadHeader::kSeqBits)) return bad("--count must be below 2^40");
  if (w.window < 1) return bad("--window must be at least 1");
  if (w.rate < 0) return bad("--rate must not be negative");
  if (w.acks != 0 && w.acks != 1 && w.acks != -1)
    return bad("--acks must be 0, 1 or -1 (all), not " + std::to_string(w.acks));
  if (w.mode != "exclusive" && w.mode != "shared")
    return bad("--mode must be exclusive or shared, not '" + w.mode + "'");
  if (w.system == "rdmq" && w.mode == "exclusive" && w.producers > w.partitions) {
    return bad("--mode exclusive gives each partition one producer: --producers (" +
               std::to_string(w.producers) + ") must not exceed --partitions (" +
               std::to_string(w.partitions) + "); use --mode shared");
  }
  if (w.fanout) {
    if (w.consumers < 1) return bad("--fanout needs --consumers of 1 or more");
    if (w.system != "rdmq" && w.system != "kafka") {
      return bad("--fanout: system '" + w.system +
                 "' gives each partition one reader; fan-out runs on rdmq and kafka");
    }
    if (w.duration.count() != 0)
      return bad("--fanout reads what --count records wrote: give --count, not --duration");
  } else if (w.consumers > w.partitions) {
    return bad("--consumers (" + std::to_string(w.consumers) + ") must not exceed --partitions (" +
               std::to_string(w.partitions) + "): each partition is read by one consumer (or use --fanout)");
  }
  return Status::Ok();
}

uint32_t EffectiveLatencySample(const Workload& w, const RunOptions& options) {
  if (options.latency_sample != 0) return options.latency_sample;
  return w.rate > 0 || w.window <= kAutoSampleWindow ? 1 : kAutoSample;
}

std::vector<int> ProducerPartitions(const Workload& w, int index) {
  std::vector<int> parts;
  if (w.partitions >= w.producers) {
    for (int p = index; p < w.partitions; p += w.producers) parts.push_back(p);
  } else {
    parts.push_back(index % w.partitions);
  }
  return parts;
}

std::vector<int> ConsumerPartitions(const Workload& w, int index) {
  std::vector<int> parts;
  if (w.consumers <= 0) return parts;
  for (int p = w.fanout ? 0 : index; p < w.partitions; p += w.fanout ? 1 : w.consumers) parts.push_back(p);
  return parts;
}

Result<Report> RunBenchmark(const Workload& w, System& system, const RunOptions& options) {
  RDMQ_RETURN_IF_ERROR(ValidateWorkload(w));
  SharedBlock block;
  Shared* sh = block.get();
  if (sh == nullptr) return Status::FromErrno(errno, "mmap the benchmark's shared block");
  SignalScope signals(sh);
  sh->latency_sample = EffectiveLatencySample(w, options);

  Report report;
  report.workload = w;
  report.latency_sample_every = sh->latency_sample;
  report.load_before = LoadAverage();

  // Workers first: in process mode they fork before any client library starts threads.
  Workers workers(w.processes);
  Status started;
  for (int i = 0; i < w.consumers && started.ok(); ++i) {
    started = workers.Start(sh->consumers[i], [&w, &system, sh, i] { RunConsumer(w, system, *sh, i); });
  }
  for (int i = 0; i < w.producers && started.ok(); ++i) {
    started = workers.Start(sh->producers[i], [&w, &system, sh, i] { RunProducer(w, system, *sh, i); });
  }
  auto abort_run = [&](Status s) -> Status {
    sh->stop.store(1);
    workers.Join();
    return s;
  };
  if (!started.ok()) return abort_run(started);

  if (Status s = system.Setup(); !s.ok()) return abort_run(s.WithContext("set up " + w.system));
  report.system_description = system.Describe();
  sh->phase.store(kPhaseOpen, std::memory_order_release);
  for (;;) {
    const int ready =
        CountState(sh->producers, w.producers, kReady) + CountState(sh->consumers, w.consumers, kReady);
    const int failed =
        CountState(sh->producers, w.producers, kFailed) + CountState(sh->consumers, w.consumers, kFailed);
    if (failed > 0) {
      std::string err = FirstError(*sh, w);
      (void)abort_run(Status::Ok());
      (void)system.Cleanup();
      return Status(Errc::kUnavailable, err);
    }
    if (ready == w.producers + w.consumers) break;
    if (std::string died = workers.Died(); !died.empty()) {
      (void)abort_run(Status::Ok());
      (void)system.Cleanup();
      return Status(Errc::kInternal, died);
    }
    if (sh->stop.load()) {
      (void)abort_run(Status::Ok());
      (void)system.Cleanup();
      return Status(Errc::kCancelled, "interrupted while the clients connected");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  report.server_pid = options.server_pid != 0 ? options.server_pid : system.ServerPid();
  Result<CpuTime> server0 =
      report.server_pid != 0 ? ProcessCpu(report.server_pid) : Result<CpuTime>(Errc::kNotFound);
  const CpuTime self0 = SelfCpu();
  sh->start_ns = MonoNanos();
  sh->deadline_ns = w.duration.count() != 0
                        ? sh->start_ns + static_cast<uint64_t>(std::chrono::nanoseconds(w.duration).count())
                        : 0;
  sh->phase.store(kPhaseRun, std::memory_order_release);

  Progress progress(options.progress, w.system);
  uint64_t producers_done_ns = 0;
  uint64_t last_acked = 0, last_consumed = 0;
  uint64_t last_sample_ns = sh->start_ns;
  const auto sample_ns = static_cast<uint64_t>(std::chrono::nanoseconds(options.sample_interval).count());
  const auto drain_ns = static_cast<uint64_t>(std::chrono::nanoseconds(options.drain_timeout).count());
  auto take_sample = [&](uint64_t now) {
    Sample s;
    s.t_s = static_cast<double>(now - sh->start_ns) / 1e9;
    uint64_t sent = 0;
    for (int i = 0; i < w.producers; ++i) {
      s.acked += sh->producers[i].completed.load(std::memory_order_relaxed);
      sent += sh->producers[i].sent.load(std::memory_order_relaxed);
    }
    for (int i = 0; i < w.consumers; ++i)
      s.consumed += sh->consumers[i].completed.load(std::memory_order_relaxed);
    const double dt = std::max(static_cast<double>(now - last_sample_ns) / 1e9, 1e-9);
    s.produce_rate = static_cast<double>(s.acked - last_acked) / dt;
    s.consume_rate = static_cast<double>(s.consumed - last_consumed) / dt;
    last_acked = s.acked;
    last_consumed = s.consumed;
    last_sample_ns = now;
    report.timeline.push_back(s);
    progress.Update(s, sent, w.message_size);
  };
  uint64_t end_ns = 0;
  for (;;) {
    // Check for the end every few milliseconds (so the CPU and elapsed times stop close to it);
    // sample the timeline every sample_interval.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const uint64_t now = MonoNanos();
    const int p_failed = CountState(sh->producers, w.producers, kFailed);
    const int c_failed = CountState(sh->consumers, w.consumers, kFailed);
    const int p_end = CountState(sh->producers, w.producers, kDone) + p_failed;
    const int c_end = CountState(sh->consumers, w.consumers, kDone) + c_failed;
    if (p_failed + c_failed > 0) sh->stop.store(1);
    if (p_end == w.producers && producers_done_ns == 0) {
      producers_done_ns = now;
      sh->targets_ready.store(1, std::memory_order_release);
    }
    const bool finished = p_end == w.producers && c_end == w.consumers;
    if (finished || now - last_sample_ns >= sample_ns) take_sample(now);
    if (finished) {
      end_ns = now;
      break;
    }
    if (!workers.Died().empty()) {
      sh->stop.store(1);
      end_ns = now;
      break;
    }
    if (producers_done_ns != 0 && now - producers_done_ns > drain_ns) {
      sh->stop.store(1);  // consumers did not get everything in time; the counts will say so
    }
  }
  progress.Finish();
  // CPU times end where the run ended, before the workers' teardown.
  const CpuTime self1 = SelfCpu();
  if (report.server_pid != 0 && server0.ok()) {
    Result<CpuTime> server1 = ProcessCpu(report.server_pid);
    if (server1.ok()) {
      report.server_cpu_known = true;
      report.server_cpu = {server1->user_s - server0->user_s, server1->sys_s - server0->sys_s};
    }
  }
  const std::string died = workers.Join();
  report.load_after = LoadAverage();
  report.interrupted = sh->interrupted.load() != 0;
  report.interrupt_signal = sh->interrupted.load();
  report.elapsed_s = static_cast<double>(end_ns - sh->start_ns) / 1e9;

  std::string failure = FirstError(*sh, w);
  if (failure.empty() && !died.empty()) failure = died;
  if (Status s = system.Cleanup(); !s.ok() && failure.empty()) {
    std::fprintf(stderr, "rdmq-bench: cleanup: %s\n", s.ToString().c_str());
  }
  if (!failure.empty()) return Status(Errc::kUnavailable, failure);

  uint64_t last_ack_ns = sh->start_ns, last_consume_ns = sh->start_ns;
  uint64_t consume_from_ns = w.fanout ? ~uint64_t{0} : sh->start_ns;
  for (int i = 0; i < w.producers; ++i) {
    const WorkerSlot& slot = sh->producers[i];
    report.sent += slot.sent.load();
    report.acked += slot.completed.load() - slot.errors.load();
    report.ack_errors += slot.errors.load();
    if (report.first_error.empty() && slot.errors.load() != 0) report.first_error = slot.error;
    last_ack_ns = std::max(last_ack_ns, slot.last_ns.load());
    report.ack_latency.Merge(slot.hist);
  }
  for (int i = 0; i < w.consumers; ++i) {
    const WorkerSlot& slot = sh->consumers[i];
    const uint64_t consumed = slot.completed.load();
    report.consumed += consumed;
    report.expected += slot.expected;
    report.duplicates += slot.duplicates;
    report.corrupt += slot.corrupt;
    const uint64_t unique = consumed - std::min(consumed, slot.duplicates + slot.corrupt);
    report.missing += slot.expected > unique ? slot.expected - unique : 0;
    last_consume_ns = std::max(last_consume_ns, slot.last_ns.load());
    report.e2e_latency.Merge(slot.hist);
    const uint64_t begin = slot.begin_ns.load();
    const uint64_t last = slot.last_ns.load();
    report.consumer_records_per_s.push_back(
        begin != 0 && last > begin ? static_cast<double>(consumed) / (static_cast<double>(last - begin) / 1e9)
                                   : 0);
    if (begin != 0) consume_from_ns = std::min(consume_from_ns, begin);
  }
  report.produce_s = static_cast<double>(last_ack_ns - sh->start_ns) / 1e9;
  if (consume_from_ns > last_consume_ns) consume_from_ns = last_consume_ns;
  report.consume_s = static_cast<double>(last_consume_ns - consume_from_ns) / 1e9;

  // Client CPU: in thread mode this process (all client threads plus the sampler); in process
  // mode the sum of the worker processes.
  if (w.processes) {
    for (int i = 0; i < w.producers + w.consumers; ++i) {
      const WorkerSlot& slot = i < w.producers ? sh->producers[i] : sh->consumers[i - w.producers];
      report.client_cpu.user_s += slot.cpu_user;
      report.client_cpu.sys_s += slot.cpu_sys;
      const double cores = (slot.cpu_user + slot.cpu_sys) / std::max(slot.run_s, 1e-9);
      report.client_max_process_cores = std::max(report.client_max_process_cores, cores);
      double& role = i < w.producers ? report.producer_max_process_cores : report.consumer_max_process_cores;
      role = std::max(role, cores);
    }
  } else {
    report.client_cpu = {self1.user_s - self0.user_s, self1.sys_s - self0.sys_s};
    report.client_max_process_cores = report.client_cpu.total() / std::max(report.elapsed_s, 1e-9);
  }
  return report;
}

}  // namespace rdmq::bench
