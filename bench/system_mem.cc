// "mem": the harness's reference system, with no server. Each partition is an append-only log
// in one anonymous MAP_SHARED mapping made when the system is constructed, so it works with
// worker threads and with forked worker processes alike. Appenders to a partition take a
// spinlock, copy the record and publish the new end with a release store; a record is
// acknowledged as soon as it is appended. Consumers read records in place up to the published
// end and sleep on a futex in the shared mapping when there is nothing to read.
// No persistence: it shows what the harness itself can drive and measure on this machine, and
// lets the test suite check the driver (both worker modes) without any service running.
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <thread>

#include "rdmq/bench/system.h"

namespace rdmq::bench {
namespace {

constexpr uint64_t kMaxPartitionBytes = 4ull << 30;
constexpr uint64_t kMaxTotalBytes = 256ull << 30;  // virtual; pages are allocated when written
constexpr uint64_t kRecordOverhead = 8;            // length word, padding to 4 bytes

struct alignas(64) PartitionHeader {
  std::atomic<uint64_t> committed{0};  // bytes of complete records
  std::atomic<uint32_t> lock{0};       // appenders' spinlock
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
  MemProducer(MemSystem& sys, AckSink* sink) : sys_(sys), sink_(sink) {}
  Status Send(int partition, std::span<const std::byte> payload, uint64_t tag) override;
  Status Poll(std::chrono::microseconds) override { return Status::Ok(); }
  Status Flush(std::chrono::milliseconds) override { return Status::Ok(); }

 private:
  MemSystem& sys_;
  AckSink* sink_;
};

class MemConsumer final : public ConsumerClient {
 public:
  MemConsumer(MemSystem& sys, std::vector<int> partitions, RecordSink* sink)
      : sys_(sys), partitions_(std::move(partitions)), positions_(partitions_.size(), 0), sink_(sink) {}
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
  explicit MemSystem(const Workload& w) : partitions_(std::max(1, w.partitions)) {
    // Room for everything a count-mode run can write to one partition, else the maximum.
    uint64_t per_partition = kMaxPartitionBytes;
    if (w.count != 0) {
      per_partition =
          std::min<uint64_t>(per_partition, w.count * static_cast<uint64_t>(std::max(1, w.producers)) *
                                                (w.message_size + kRecordOverhead));
    }
    capacity_ = std::max<uint64_t>((per_partition + 4095) & ~uint64_t{4095}, 4096);
    if (capacity_ * static_cast<uint64_t>(partitions_) > kMaxTotalBytes) {
      capacity_ = (kMaxTotalBytes / static_cast<uint64_t>(partitions_)) & ~uint64_t{4095};
    }
    headers_bytes_ = sizeof(SharedHeader) + sizeof(PartitionHeader) * static_cast<size_t>(partitions_);
    headers_bytes_ = (headers_bytes_ + 4095) & ~size_t{4095};
    map_bytes_ = headers_bytes_ + capacity_ * static_cast<uint64_t>(partitions_);
    void* p =
        mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
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
    return "mem: shared-memory queue in the harness (reference; no server, no persistence)";
  }
  Status Setup() override {
    if (base_ == nullptr) return map_error_;
    for (int i = 0; i < partitions_; ++i) partition_header(i).committed.store(0);
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

  Status Append(int partition, std::span<const std::byte> payload) {
    RDMQ_RETURN_IF_ERROR(CheckPartition(partition));
    PartitionHeader& h = partition_header(partition);
    const uint64_t need = (sizeof(uint32_t) + payload.size() + 3) & ~uint64_t{3};
    while (h.lock.exchange(1, std::memory_order_acquire) != 0) {
      while (h.lock.load(std::memory_order_relaxed) != 0) std::this_thread::yield();
    }
    const uint64_t pos = h.committed.load(std::memory_order_relaxed);
    if (pos + need > capacity_) {
      h.lock.store(0, std::memory_order_release);
      return Status(Errc::kResourceExhausted, "mem system partition " + std::to_string(partition) +
                                                  " is full (" + std::to_string(capacity_) + " bytes)");
    }
    std::byte* at = data(partition) + pos;
    const auto len = static_cast<uint32_t>(payload.size());
    std::memcpy(at, &len, sizeof(len));
    std::memcpy(at + sizeof(len), payload.data(), payload.size());
    h.committed.store(pos + need, std::memory_order_release);
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
    const std::byte* d = data(partition);
    size_t n = 0;
    while (*pos < end && n < max) {
      uint32_t len = 0;
      std::memcpy(&len, d + *pos, sizeof(len));
      out->emplace_back(d + *pos + sizeof(len), len);
      *pos += (sizeof(len) + len + 3) & ~uint64_t{3};
      ++n;
    }
    return n;
  }

  uint32_t version() const { return header_->version.load(std::memory_order_seq_cst); }
  // Waits until an append after `seen` or the timeout: spins for up to 50 us first (as rdmq's
  // consumers do), so a busy producer does not pay a futex wake per record.
  void Wait(uint32_t seen, std::chrono::milliseconds timeout) {
    const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    while (std::chrono::steady_clock::now() < spin_until) {
      if (version() != seen) return;
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
  Status CheckPartition(int p) const {
    if (p < 0 || p >= partitions_)
      return Status(Errc::kInvalidArgument, "mem system has no partition " + std::to_string(p));
    return Status::Ok();
  }
  PartitionHeader& partition_header(int p) const {
    return reinterpret_cast<PartitionHeader*>(base_ + sizeof(SharedHeader))[p];
  }
  std::byte* data(int p) const { return base_ + headers_bytes_ + capacity_ * static_cast<uint64_t>(p); }

  int partitions_;
  uint64_t capacity_ = 0;
  size_t headers_bytes_ = 0;
  uint64_t map_bytes_ = 0;
  std::byte* base_ = nullptr;
  SharedHeader* header_ = nullptr;
  Status map_error_;
};

Status MemProducer::Send(int partition, std::span<const std::byte> payload, uint64_t tag) {
  Status s = sys_.Append(partition, payload);
  if (s.is(Errc::kInvalidArgument)) return s;
  sink_->OnAck(tag, s);
  return Status::Ok();
}

Status MemConsumer::Poll(std::chrono::milliseconds timeout) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const uint32_t seen = sys_.version();
    size_t total = 0;
    for (size_t i = 0; i < partitions_.size(); ++i) {
      batch_.clear();
      const size_t n = sys_.Read(partitions_[i], &positions_[i], 4096, &batch_);
      if (n != 0) sink_->OnRecords(partitions_[i], batch_);
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
