#include "consumer/reconnect.h"

#include "rdmq/common/log.h"

namespace rdmq::consumer {

Result<bool> Reconnector::Ensure(client::Connection& conn, const std::function<void()>& detach) {
  using Clock = std::chrono::steady_clock;
  if (conn.connected()) return false;
  if (!lost_) {
    lost_ = true;
    last_ = Status(Errc::kUnavailable, "the broker at " + conn.address() + " went away");
    RDMQ_LOG(kWarn, "consumer", "lost the broker; reconnecting").kv("broker", conn.address());
    detach();
    backoff_.Reset();
    next_ = Clock::now() + backoff_.Next();
  }
  if (Clock::now() < next_) return last_;
  auto link = conn.Dial();
  if (!link.ok()) {
    last_ = link.status();
    next_ = Clock::now() + backoff_.Next();
    return last_.is(Errc::kUnavailable) ? last_ : Status(Errc::kUnavailable, last_.ToString());
  }
  conn.Install(std::move(*link));
  lost_ = false;
  RDMQ_LOG(kInfo, "consumer", "reconnected to the broker; reopening partitions").kv("broker", conn.address());
  return true;
}

}  // namespace rdmq::consumer
