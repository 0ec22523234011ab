// "mem": the harness's reference system, with no server. Each partition is a ring of records in
// one anonymous MAP_SHARED mapping made (and prefaulted) when the system is constructed, so it
// works with worker threads and with forked worker processes alike.
//
// A producer gathers the records of each partition in a private batch (up to the workload's
// batch size, at most kMaxBatchBytes) and appends the batch when the driver polls or flushes
// it, or when it is full: one spinlock, one copy into the ring, one release store of the new
// end and one wake-up check per batch, then the batch's acks in send order, as one group. A
// record is acknowledged once its batch is appended. Consumers read records in place up to the
// published end, release them after the driver has checked them (the producer waits for that
// before it overwrites them), and sleep on a futex in the shared mapping when there is nothing
// to read. Without consumers the rings are overwritten freely.
//
// Ring layout: positions count bytes since the start and never wrap; a position's byte is at
// position % capacity. A record is a 4-byte length and the payload, padded to 4 bytes. A batch
// never straddles the end of the ring: when it does not fit before the end, a wrap mark (length
// kWrapMark) sends readers to the start.
//
// No persistence: it shows what the harness itself can drive and measure on this machine, and
// lets the test suite check the driver (both worker modes) without any service running.
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <thread>

#include "rdmq/bench/system.h"
#include "rdmq/common/clock.h"

namespace rdmq::bench {
namespace {

constexpr uint64_t kMaxBatchBytes = 64ull << 10;
constexpr uint64_t kRingBytes = 8ull << 20;           // per partition, when the budget allows
constexpr uint64_t kRingBudgetBytes = 256ull << 20;   // all partitions together
constexpr uint64_t kPrefaultLimitBytes = 1ull << 30;  // larger mappings fault their pages in lazily
constexpr uint32_t kWrapMark = 0xFFFFFFFF;
// How long a producer waits for a consumer to release room in a full ring before it fails the
// batch (the consumer is stuck or gone).
constexpr uint64_t kFullRingTimeoutNs = 30'000'000'000;

uint64_t RecordBytes(uint64_t payload) { return (sizeof(uint32_t) + payload + 3) & ~uint64_t{3}; }

struct alignas(64) PartitionHeader {
  std::atomic<uint64_t> committed{0};  // end of the complete records (position)
  std::atomic<uint32_t> lock{0};       // appenders' spinlock
  // The consumer's line: every record before `released` was read and checked; the producers
  // may overwrite it. `reader` is 0 once the consumer is gone (nobody to wait for).
  alignas(64) std::atomic<uint64_t> released{0};
  std::atomic<uint32_t> reader{0};
};

struct alignas(64) SharedHeader {
  std::atomic<uint32_t> version{0};  // bumped after every append; the futex word
  std::atomic<uint32_t> sleepers{0};
};

static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free);

long Futex(std::atomic<uint32_t>* word, int op, uint32_t val, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, timeout, nullptr, 0);
}

class MemSystem;

class MemProducer final : public ProducerClient {
 public:
  MemProducer(MemSystem& sys, AckSink* sink);
  Status Send(int partition, std::span<const std::byte> payload, uint64_t tag) override;
  Status Poll(std::chrono::microseconds) override { return AppendBatches(); }
  Status Flush(std::chrono::milliseconds) override { return AppendBatches(); }

 private:
  struct Batch {
    std::vector<std::byte> bytes;  // records as the ring holds them; sized once, at first use
    uint64_t used = 0;
    Status appended;  // the last append's verdict
  };
  // Appends every batch with records, then delivers the acks of all of them in send order.
  Status AppendBatches();

  MemSystem& sys_;
  AckSink* sink_;
  std::vector<Batch> batches_;       // per partition
  std::vector<int> dirty_;           // partitions whose batch has records, in first-use order
  std::vector<uint64_t> tags_;       // the batches' records in send order
  std::vector<int> tag_partitions_;  // and their partitions
};

class MemConsumer final : public ConsumerClient {
 public:
  MemConsumer(MemSystem& sys, std::vector<int> partitions, RecordSink* sink);
  ~MemConsumer() override;
  MemConsumer(const MemConsumer&) = delete;
  MemConsumer& operator=(const MemConsumer&) = delete;
  Status Poll(std::chrono::milliseconds timeout) override;

 private:
  MemSystem& sys_;
  std::vector<int> partitions_;
  std::vector<uint64_t> positions_;
  RecordSink* sink_;
  std::vector<std::span<const std::byte>> batch_;
};

class MemSystem final : public System {
 public:
  explicit MemSystem(const Workload& w)
      : partitions_(std::max(1, w.partitions)),
        readers_(w.consumers > 0),
        batch_limit_(
            std::max(RecordBytes(w.message_size), std::min<uint64_t>(w.batch_size, kMaxBatchBytes))) {
    // A power of two, room for four full batches, and the default size when the budget allows.
    const uint64_t share = std::max<uint64_t>(kRingBudgetBytes / static_cast<uint64_t>(partitions_), 4096);
    capacity_ = std::bit_ceil(std::max(4 * batch_limit_, std::min(kRingBytes, share)));
    headers_bytes_ = sizeof(SharedHeader) + sizeof(PartitionHeader) * static_cast<size_t>(partitions_);
    headers_bytes_ = (headers_bytes_ + 4095) & ~size_t{4095};
    map_bytes_ = headers_bytes_ + capacity_ * static_cast<uint64_t>(partitions_);
    // Prefaulted, so that no page fault lands in a measured run.
    const int populate = map_bytes_ <= kPrefaultLimitBytes ? MAP_POPULATE : 0;
    void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE | populate, -1, 0);
    if (p == MAP_FAILED) {
      map_error_ =
          Status::FromErrno(errno, "mmap " + std::to_string(map_bytes_) + " bytes for the mem system");
      return;
    }
    base_ = static_cast<std::byte*>(p);
    header_ = new (base_) SharedHeader();
    for (int i = 0; i < partitions_; ++i) new (&partition_header(i)) PartitionHeader();
  }
  ~MemSystem() override {
    if (base_ != nullptr) munmap(base_, map_bytes_);
  }
  MemSystem(const MemSystem&) = delete;
  MemSystem& operator=(const MemSystem&) = delete;

  std::string Describe() const override {
    return "mem: shared-memory rings in the harness (reference; no server, no persistence)";
  }
  Status Setup() override {
    if (base_ == nullptr) return map_error_;
    for (int i = 0; i < partitions_; ++i) {
      PartitionHeader& h = partition_header(i);
      h.committed.store(0);
      h.released.store(0);
      h.reader.store(readers_ ? 1 : 0);
    }
    return Status::Ok();
  }
  Result<std::unique_ptr<ProducerClient>> OpenProducer(int, AckSink* sink) override {
    if (base_ == nullptr) return map_error_;
    return std::unique_ptr<ProducerClient>(std::make_unique<MemProducer>(*this, sink));
  }
  Result<std::unique_ptr<ConsumerClient>> OpenConsumer(int, const std::vector<int>& partitions,
                                                       RecordSink* sink) override {
    if (base_ == nullptr) return map_error_;
    for (int p : partitions) RDMQ_RETURN_IF_ERROR(CheckPartition(p));
    return std::unique_ptr<ConsumerClient>(std::make_unique<MemConsumer>(*this, partitions, sink));
  }
  Status Cleanup() override { return Status::Ok(); }

  int partitions() const { return partitions_; }
  uint64_t batch_limit() const { return batch_limit_; }
  Status CheckPartition(int p) const {
    if (p < 0 || p >= partitions_)
      return Status(Errc::kInvalidArgument, "mem system has no partition " + std::to_string(p));
    return Status::Ok();
  }

  // Appends `bytes` (whole records, at most batch_limit()) to the partition's ring, waiting for
  // its consumer to release room when the ring is full; kTimeout if it does not.
  Status Append(int partition, std::span<const std::byte> bytes) {
    PartitionHeader& h = partition_header(partition);
    const uint64_t n = bytes.size();
    while (h.lock.exchange(1, std::memory_order_acquire) != 0) {
      while (h.lock.load(std::memory_order_relaxed) != 0) std::this_thread::yield();
    }
    uint64_t pos = h.committed.load(std::memory_order_relaxed);
    std::byte* const ring = data(partition);
    uint64_t at = pos & (capacity_ - 1);
    const uint64_t wrap_from = at + n > capacity_ ? at : capacity_;  // where a wrap mark goes
    if (wrap_from != capacity_) {
      pos += capacity_ - at;
      at = 0;
    }
    if (Status s = AwaitRoom(h, pos + n); !s.ok()) {
      h.lock.store(0, std::memory_order_release);
      return s.WithContext("mem system partition " + std::to_string(partition));
    }
    if (wrap_from != capacity_) std::memcpy(ring + wrap_from, &kWrapMark, sizeof(kWrapMark));
    std::memcpy(ring + at, bytes.data(), n);
    h.committed.store(pos + n, std::memory_order_release);
    h.lock.store(0, std::memory_order_release);
    header_->version.fetch_add(1, std::memory_order_seq_cst);
    if (header_->sleepers.load(std::memory_order_seq_cst) != 0) {
      Futex(&header_->version, FUTEX_WAKE, INT_MAX, nullptr);
    }
    return Status::Ok();
  }

  // Appends views of up to `max` records from *pos to `out`, advancing *pos.
  size_t Read(int partition, uint64_t* pos, size_t max, std::vector<std::span<const std::byte>>* out) const {
    const uint64_t end = partition_header(partition).committed.load(std::memory_order_acquire);
    const std::byte* const ring = data(partition);
    size_t n = 0;
    uint64_t p = *pos;
    while (p < end && n < max) {
      const uint64_t at = p & (capacity_ - 1);
      uint32_t len = 0;
      std::memcpy(&len, ring + at, sizeof(len));
      if (len == kWrapMark) {
        p += capacity_ - at;
        continue;
      }
      out->emplace_back(ring + at + sizeof(len), len);
      p += RecordBytes(len);
      ++n;
    }
    *pos = p;
    return n;
  }
  // The consumer is done with everything before `pos`.
  void Release(int partition, uint64_t pos) {
    partition_header(partition).released.store(pos, std::memory_order_release);
  }
  void ReaderGone(int partition) { partition_header(partition).reader.store(0, std::memory_order_release); }

  uint32_t version() const { return header_->version.load(std::memory_order_seq_cst); }
  // Waits until an append after `seen` or the timeout: spins for up to 50 us first (as rdmq's
  // consumers do), so a busy producer does not pay a futex wake per batch.
  void Wait(uint32_t seen, std::chrono::milliseconds timeout) {
    const uint64_t spin_until = MonoNanos() + 50'000;
    for (uint32_t i = 1;; ++i) {
      if (version() != seen) return;
      if ((i & 63) == 0 && MonoNanos() >= spin_until) break;
    }
    header_->sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (version() == seen) {
      timespec ts{static_cast<time_t>(timeout.count() / 1000),
                  static_cast<long>(timeout.count() % 1000) * 1000000};
      Futex(&header_->version, FUTEX_WAIT, seen, &ts);
    }
    header_->sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }

 private:
  // Waits until the ring has room up to position `end`: its consumer released everything older
  // than end - capacity (or is gone, or there is none).
  Status AwaitRoom(const PartitionHeader& h, uint64_t end) const {
    if (end <= capacity_) return Status::Ok();
    const uint64_t need = end - capacity_;
    uint64_t deadline = 0;
    for (uint32_t i = 1; h.released.load(std::memory_order_acquire) < need; ++i) {
      if (h.reader.load(std::memory_order_acquire) == 0) return Status::Ok();
      std::this_thread::yield();  // the consumer may need this CPU
      if ((i & 255) == 0) {
        const uint64_t now = MonoNanos();
        if (deadline == 0) deadline = now + kFullRingTimeoutNs;
        if (now >= deadline)
          return Status(Errc::kTimeout, "ring full: its consumer released nothing for 30 s");
      }
    }
    return Status::Ok();
  }
  PartitionHeader& partition_header(int p) const {
    return reinterpret_cast<PartitionHeader*>(base_ + sizeof(SharedHeader))[p];
  }
  std::byte* data(int p) const { return base_ + headers_bytes_ + capacity_ * static_cast<uint64_t>(p); }

  int partitions_;
  bool readers_;  // every partition has a consumer (ConsumerPartitions gives each one)
  uint64_t batch_limit_;
  uint64_t capacity_ = 0;  // per partition; a power of two
  size_t headers_bytes_ = 0;
  uint64_t map_bytes_ = 0;
  std::byte* base_ = nullptr;
  SharedHeader* header_ = nullptr;
  Status map_error_;
};

MemProducer::MemProducer(MemSystem& sys, AckSink* sink)
    : sys_(sys), sink_(sink), batches_(static_cast<size_t>(sys.partitions())) {
  tags_.reserve(4096);
  tag_partitions_.reserve(4096);
}

Status MemProducer::Send(int partition, std::span<const std::byte> payload, uint64_t tag) {
  if (static_cast<size_t>(partition) >= batches_.size()) return sys_.CheckPartition(partition);
  const uint64_t need = RecordBytes(payload.size());
  Batch& b = batches_[static_cast<size_t>(partition)];
  if (b.used + need > sys_.batch_limit()) RDMQ_RETURN_IF_ERROR(AppendBatches());
  if (b.bytes.empty()) b.bytes.resize(sys_.batch_limit());
  if (b.used == 0) dirty_.push_back(partition);
  const auto len = static_cast<uint32_t>(payload.size());
  std::memcpy(b.bytes.data() + b.used, &len, sizeof(len));
  std::memcpy(b.bytes.data() + b.used + sizeof(len), payload.data(), payload.size());
  b.used += need;
  tags_.push_back(tag);
  tag_partitions_.push_back(partition);
  return Status::Ok();
}

Status MemProducer::AppendBatches() {
  if (tags_.empty()) return Status::Ok();
  bool all_ok = true;
  for (int p : dirty_) {
    Batch& b = batches_[static_cast<size_t>(p)];
    b.appended = sys_.Append(p, std::span<const std::byte>(b.bytes.data(), b.used));
    all_ok = all_ok && b.appended.ok();
    b.used = 0;
  }
  dirty_.clear();
  if (all_ok) {
    sink_->OnAcks(tags_, Status::Ok());
  } else {
    for (size_t i = 0; i < tags_.size(); ++i)
      sink_->OnAck(tags_[i], batches_[static_cast<size_t>(tag_partitions_[i])].appended);
  }
  tags_.clear();
  tag_partitions_.clear();
  return Status::Ok();
}

MemConsumer::MemConsumer(MemSystem& sys, std::vector<int> partitions, RecordSink* sink)
    : sys_(sys), partitions_(std::move(partitions)), positions_(partitions_.size(), 0), sink_(sink) {
  batch_.reserve(4096);
}

MemConsumer::~MemConsumer() {
  for (int p : partitions_) sys_.ReaderGone(p);
}

Status MemConsumer::Poll(std::chrono::milliseconds timeout) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const uint32_t seen = sys_.version();
    size_t total = 0;
    for (size_t i = 0; i < partitions_.size(); ++i) {
      batch_.clear();
      const uint64_t from = positions_[i];
      const size_t n = sys_.Read(partitions_[i], &positions_[i], 4096, &batch_);
      if (n != 0) sink_->OnRecords(partitions_[i], batch_);
      if (positions_[i] != from) sys_.Release(partitions_[i], positions_[i]);
      total += n;
    }
    if (total != 0 || attempt == 1) return Status::Ok();
    sys_.Wait(seen, timeout);
  }
  return Status::Ok();
}

}  // namespace

std::unique_ptr<System> MakeMemSystem(const Workload& workload) {
  return std::make_unique<MemSystem>(workload);
}

}  // namespace rdmq::bench
