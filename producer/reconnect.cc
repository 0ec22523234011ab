// Losing the broker and connecting again (core.h). All of it runs on the I/O thread: it notices
// that the connection broke (other threads only wake it), suspends the data path, takes every
// lease as lost (the batches not acknowledged wait in their queues) and drops what was attached
// to or granted on the old endpoint; then, spaced by the reconnect backoff, it dials the
// bootstrap servers until one answers and installs the new link. Leases reopen afterwards as
// after any lost lease (lease.cc), and the AckTracker completes the batches the broker already
// has instead of resending them. Records fail only when delivery.timeout.ms passes.
#include "producer/core.h"
#include "rdmq/common/log.h"

namespace rdmq::producer {

void Core::CheckConnection() {
  if (conn_->connected() || lost_.load(std::memory_order_relaxed)) return;
  const uint64_t now = MonoNanos();
  const std::string address = conn_->address();
  const Status why(Errc::kUnavailable, "the broker at " + address + " went away");
  RDMQ_LOG(kWarn, "producer", "lost the broker; reconnecting (records wait up to delivery.timeout.ms)")
      .kv("broker", address)
      .kv("delivery_timeout_ms", cfg_.delivery_timeout.count());
  lost_since_ns_ = now;
  last_dial_error_ = why;
  lost_.store(true, std::memory_order_relaxed);
  // From here no post, attachment or grant succeeds, so that nothing new ties itself to the old
  // endpoint; operations waited for on it give up.
  data_.Suspend();
  for (PState* ps : topics_.Partitions()) {
    PLock lock(this, *ps);
    LeaseLost(*ps, why);
    ps->tracker.LeaseUnavailable(now);
    MutexLock plock(data_.post_mu());
    ps->lease.remote.reset();
    ps->lease.ack_grant.reset();
    ps->read_segs.clear();
  }
  backoff_->Reset();
  next_dial_ns_ = now + static_cast<uint64_t>(std::chrono::nanoseconds(backoff_->Next()).count());
  NotifySleepers();
}

void Core::Reconnect(uint64_t now) {
  if (now < next_dial_ns_ || closing_.load(std::memory_order_acquire)) return;
  auto link = conn_->Dial();
  if (!link.ok()) {
    last_dial_error_ = link.status();
    const auto wait = backoff_->Next();
    next_dial_ns_ = MonoNanos() + static_cast<uint64_t>(std::chrono::nanoseconds(wait).count());
    RDMQ_LOG(kDebug, "producer", "the broker is still unreachable")
        .kv("attempt", backoff_->attempts())
        .kv("retry_in_ms", wait.count())
        .kv("error", link.status());
    return;
  }
  // Nothing is attached to or granted on the old endpoint any more (CheckConnection dropped it
  // all, and the suspended data path let nothing new through).
  const Status s = data_.Resume(std::move(*link));
  lost_.store(false, std::memory_order_relaxed);
  if (!s.ok()) {
    // The new connection broke at once: the next tick finds it broken and starts over.
    RDMQ_LOG(kWarn, "producer", "the new connection to the broker failed").kv("error", s);
    return;
  }
  RDMQ_LOG(kInfo, "producer", "reconnected to the broker; reopening leases")
      .kv("broker", conn_->address())
      .kv("after_ms", (MonoNanos() - lost_since_ns_) / 1'000'000);
  for (PState* ps : topics_.Partitions()) {
    PLock lock(this, *ps);
    ps->lease.retry_at_ns = 0;
    if (ps->tracker.has_queued()) (void)Reopen(*ps);
  }
  NotifySleepers();
}

Status Core::Undeliverable(PState& ps) {
  const std::string what =
      "not acknowledged within delivery.timeout.ms=" + std::to_string(cfg_.delivery_timeout.count()) + " (" +
      ps.topic->name + "-" + std::to_string(ps.partition.value()) + "): ";
  if (lost_.load(std::memory_order_relaxed)) {
    return Status(Errc::kTimeout, what + "the broker at " + conn_->address() +
                                      " is unreachable (last error: " + last_dial_error_.ToString() + ")");
  }
  return Status(Errc::kTimeout,
                what + "no lease could be opened (last error: " + ps.lease.last_error.ToString() + ")");
}

}  // namespace rdmq::producer
