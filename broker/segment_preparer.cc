#include "segment_preparer.h"

#include "rdmq/common/log.h"

namespace rdmq::broker::internal {

void SegmentPreparer::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void SegmentPreparer::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void SegmentPreparer::MaybeWant(Partition& p) {
  if (!p.WantsSpare()) return;
  {
    MutexLock lock(mu_);
    if (stop_) return;
    queue_.push_back(p.weak_from_this());
  }
  cv_.NotifyAll();
}

void SegmentPreparer::Loop() {
  while (true) {
    std::shared_ptr<Partition> p;
    {
      UniqueLock lock(mu_);
      while (!stop_ && queue_.empty()) cv_.Wait(lock);
      if (stop_) return;
      p = queue_.front().lock();
      queue_.pop_front();
    }
    if (!p) continue;  // deleted meanwhile
    std::shared_ptr<storage::PartitionLog> log;
    {
      MutexLock lock(p->mu);
      log = p->SharedLog();
    }
    if (!log) continue;
    // Without the partition's lock: the log takes its own only to decide and to keep the file.
    const Result<bool> made = log->PrepareSpare();
    if (!made.ok()) {
      Counters::Add(n_.spare_segments_failed);
      RDMQ_LOG(kWarn, "broker", "the next segment could not be made ahead; the roll will make it")
          .kv("partition", p->where())
          .kv("error", made.status());
    } else if (*made) {
      Counters::Add(n_.spare_segments);
    }
  }
}

}  // namespace rdmq::broker::internal
