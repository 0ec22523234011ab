#include "producer/data_path.h"

#include <thread>

#include "rdmq/common/cpu.h"
#include "rdmq/common/log.h"

namespace rdmq::producer {

using Clock = std::chrono::steady_clock;

Status DataPath::Init(client::Connection* conn, std::chrono::milliseconds op_timeout,
                      const std::atomic<bool>* closing) {
  conn_ = conn;
  op_timeout_ = op_timeout;
  closing_ = closing;
  std::vector<fabric::RecvRequest> rr(1024);
  MutexLock lock(post_mu_);
  endpoint_id_.store(conn_->data()->id(), std::memory_order_relaxed);
  return conn_->data()->PostRecv(rr);
}

Status DataPath::Usable() const {
  if (suspended_) return Status(Errc::kUnavailable, "reconnecting to the broker");
  return Status::Ok();
}

void DataPath::Suspend() {
  MutexLock lock(post_mu_);
  suspended_ = true;
  MutexLock ops(ops_mu_);
  failed_below_ = next_op_;
}

Status DataPath::Resume(std::unique_ptr<client::Connection::Link> link) {
  MutexLock lock(post_mu_);
  conn_->Install(std::move(link));
  endpoint_id_.store(conn_->data()->id(), std::memory_order_relaxed);
  recv_owed_ = 0;
  suspended_ = false;
  broken_logged_.store(false);
  std::vector<fabric::RecvRequest> rr(1024);
  return conn_->data()->PostRecv(rr);
}

Status DataPath::Post(std::span<const fabric::WorkRequest> wrs) {
  UniqueLock lock(post_mu_);
  RDMQ_RETURN_IF_ERROR(Usable());
  Status s = conn_->data()->Post(wrs);
  for (int i = 0; s.is(fabric::FabricErrc::kQueueFull) && i < 100000; ++i) {
    lock.Unlock();
    Drain();
    std::this_thread::yield();
    lock.Lock();
    RDMQ_RETURN_IF_ERROR(Usable());
    s = conn_->data()->Post(wrs);
  }
  return s;
}

Status DataPath::PostAndWait(fabric::WorkRequest wr) {
  uint64_t op;
  {
    MutexLock lock(ops_mu_);
    op = next_op_++;
  }
  wr.tag = (kTagWait << kTagKindShift) | op;
  wr.signaled = true;
  RDMQ_RETURN_IF_ERROR(Post({&wr, 1}));
  const auto deadline = Clock::now() + op_timeout_;
  while (true) {
    {
      MutexLock lock(ops_mu_);
      auto it = ops_done_.find(op);
      if (it != ops_done_.end()) {
        const std::error_code ec = it->second;
        ops_done_.erase(it);
        return ec ? Status(ec, "data-plane operation") : Status::Ok();
      }
      if (op < failed_below_)
        return Status(Errc::kUnavailable, "the broker went away during a data-plane operation");
    }
    if (Clock::now() > deadline) return Status(Errc::kTimeout, "data-plane operation timed out");
    if (!Drain()) CpuRelax();
  }
}

bool DataPath::Drain() {
  if (polling_.test_and_set(std::memory_order_acquire)) return false;
  fabric::Completion wc[64];
  size_t total = 0;
  const size_t n = conn_->recv_cq()->Poll(wc);
  total += n;
  bool broken = false;
  const uint64_t current = endpoint_id_.load(std::memory_order_relaxed);
  uint32_t owed = 0;
  for (size_t i = 0; i < n; ++i) {
    if (wc[i].endpoint_id != current) continue;  // an old endpoint's, before a reconnect
    if (wc[i].status) broken = true;
    ++owed;
  }
  if (owed > 0 && !broken) {
    MutexLock lock(post_mu_);
    recv_owed_ += owed;
    if (recv_owed_ >= 64) {
      std::vector<fabric::RecvRequest> rr(recv_owed_);
      if (conn_->data()->PostRecv(rr).ok()) recv_owed_ = 0;
    }
  }
  const size_t m = conn_->send_cq()->Poll(wc);
  total += m;
  if (m > 0) {
    MutexLock lock(ops_mu_);
    for (size_t i = 0; i < m; ++i) {
      const uint64_t kind = wc[i].tag >> kTagKindShift;
      const uint64_t low = wc[i].tag & ((uint64_t{1} << kTagKindShift) - 1);
      if (kind == kTagWait) {
        if (low >= failed_below_) ops_done_[low] = wc[i].status;  // else its waiter has given up
      } else if (wc[i].status && wc[i].endpoint_id == current) {
        failed_parts_.push_back(static_cast<uint32_t>(low));
        if (wc[i].status == fabric::FabricErrc::kPeerGone) broken = true;
      }
    }
  }
  polling_.clear(std::memory_order_release);
  if (broken && !closing_->load() && !broken_logged_.exchange(true)) {
    RDMQ_LOG(kWarn, "producer", "the data connection to the broker broke").kv("broker", conn_->address());
  }
  return total > 0;
}

void DataPath::TakeFailedWrites(std::vector<uint32_t>& out) {
  MutexLock lock(ops_mu_);
  out.swap(failed_parts_);
}

}  // namespace rdmq::producer
