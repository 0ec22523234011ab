#include "rpc/credit.h"

#include <algorithm>

#include "rpc/wire.h"

namespace rdmq::rpc {

uint32_t SampleWindow::MedianX16() const noexcept {
  const uint32_t n = size();
  if (n == 0) return 0;
  std::array<uint32_t, 64> v = samples_;
  auto* mid = v.begin() + n / 2;
  std::nth_element(v.begin(), mid, v.begin() + n);
  const uint64_t hi = *mid;
  if (n % 2 == 1) return static_cast<uint32_t>(hi * 16);
  const uint64_t lo = *std::max_element(v.begin(), mid);
  return static_cast<uint32_t>((lo + hi) * 8);
}

uint32_t CreditSender::Take(uint32_t wanted) noexcept {
  const uint64_t n = std::min<uint64_t>(wanted, available());
  if (n == 0) return 0;
  sent_ += n;
  degrees_.Add(static_cast<uint32_t>(n));
  return static_cast<uint32_t>(n);
}

std::optional<Renewal> CreditSender::MaybeRenew() noexcept {
  if (!active_ || pending_ || limit_ - std::min(limit_, sent_) > credits_ / 2) return std::nullopt;
  pending_ = true;
  seq_ = static_cast<uint16_t>((seq_ + 1) & kImmSeqMask);
  Renewal r{seq_, static_cast<uint16_t>(std::min<uint32_t>(degrees_.MedianX16(), 65535))};
  degrees_.Clear();
  return r;
}

void CreditSender::OnServerState(uint64_t limit, bool active, bool answers_renewal,
                                 uint32_t credit_seq) noexcept {
  if (limit > limit_) limit_ = limit;
  active_ = active;
  if (answers_renewal && pending_ && (credit_seq & kImmSeqMask) == seq_) pending_ = false;
  // A reactivation after a refusal starts a new renewal cycle.
  if (!active_) pending_ = false;
}

CreditGranter::Decision CreditGranter::OnRenewal(uint16_t seq, uint16_t degree_x16) noexcept {
  utilization_x16_ += degree_x16;
  Decision d;
  d.seq = seq;
  if (active_) {
    limit_ += credits_;
    d.granted = true;
  }
  d.limit = limit_;
  return d;
}

}  // namespace rdmq::rpc
