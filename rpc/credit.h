// Credits (FLOCK section 3.4.1), sans-I/O: the client's and the server's view of one channel.
//
// A credit lets a channel carry one request. Counts are cumulative so that every message about
// them is idempotent: the client counts requests `sent`, the server counts requests `consumed`,
// and the server grants a cumulative `limit` (starting at C). The client may send while
// sent < limit. When at most C/2 credits are left, the client asks for C more with a
// WRITE_WITH_IMM (ImmKind::kCreditRenewal) carrying a renewal number and the median coalescing
// degree of the messages it sent since the previous renewal. The server's channel scheduler
// grants (limit += C) or refuses; a refusal deactivates the channel. Every response message
// carries the current limit and the active flag, and the answer to a renewal is marked with
// kFlagCredit and its number.
//
// Threading: thread-compatible; the RPC layer guards each instance with its channel's lock.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace rdmq::rpc {

inline constexpr uint32_t kDefaultCredits = 32;

// A window of the most recent samples (up to 64) and their median.
class SampleWindow {
 public:
  void Add(uint32_t v) noexcept {
    samples_[next_ % samples_.size()] = v;
    ++next_;
  }
  uint32_t size() const noexcept {
    return next_ < samples_.size() ? next_ : static_cast<uint32_t>(samples_.size());
  }
  bool empty() const noexcept { return next_ == 0; }
  void Clear() noexcept { next_ = 0; }
  // Median in 1/16ths (the mean of the two middle samples when the count is even); 0 if empty.
  uint32_t MedianX16() const noexcept;
  uint32_t Median() const noexcept { return MedianX16() / 16; }

 private:
  std::array<uint32_t, 64> samples_{};
  uint32_t next_ = 0;
};

struct Renewal {
  uint16_t seq = 0;         // 14-bit renewal number
  uint16_t degree_x16 = 0;  // median coalescing degree in 1/16ths
};

// The client's side of one channel.
class CreditSender {
 public:
  explicit CreditSender(uint32_t credits = kDefaultCredits) noexcept : credits_(credits), limit_(credits) {}

  uint32_t credits_per_grant() const noexcept { return credits_; }
  bool active() const noexcept { return active_; }
  uint64_t sent() const noexcept { return sent_; }
  uint64_t limit() const noexcept { return limit_; }
  uint64_t available() const noexcept { return active_ && limit_ > sent_ ? limit_ - sent_ : 0; }
  bool renewal_pending() const noexcept { return pending_; }

  // Takes up to `wanted` credits for one message; returns how many (0: the sender must wait).
  // Records the message's coalescing degree (the number taken) for the next renewal.
  uint32_t Take(uint32_t wanted) noexcept;
  // After a message was sent: the renewal to request now, if one is due (active, at most half
  // of C left, none pending). Marks it pending.
  std::optional<Renewal> MaybeRenew() noexcept;
  // Server state from a response header: limit, active flag, and whether it answers renewal
  // `credit_seq` (kFlagCredit). A limit never shrinks.
  void OnServerState(uint64_t limit, bool active, bool answers_renewal, uint32_t credit_seq) noexcept;
  // Marks the pending renewal as lost (its send failed), so that a later one may be requested.
  void CancelRenewal() noexcept { pending_ = false; }

 private:
  uint32_t credits_;
  uint64_t limit_;
  uint64_t sent_ = 0;
  bool active_ = true;
  bool pending_ = false;
  uint16_t seq_ = 0;
  SampleWindow degrees_;
};

// The server's side of one channel.
class CreditGranter {
 public:
  explicit CreditGranter(uint32_t credits = kDefaultCredits, bool active = true) noexcept
      : credits_(credits), limit_(credits), active_(active) {}

  uint32_t credits_per_grant() const noexcept { return credits_; }
  uint64_t limit() const noexcept { return limit_; }
  uint64_t consumed() const noexcept { return consumed_; }
  bool active() const noexcept { return active_; }

  // Requests arrived: false, changing nothing, when they exceed the granted limit.
  bool OnRequests(uint32_t count) noexcept {
    if (consumed_ + count > limit_) return false;
    consumed_ += count;
    requests_since_take_ += count;
    return true;
  }

  struct Decision {
    bool granted = false;
    uint64_t limit = 0;
    uint16_t seq = 0;
  };
  // A renewal request: grants C more when the channel is active, refuses otherwise. The reported
  // degree counts towards the channel's utilisation (U_ij of Equation 3.1) either way.
  Decision OnRenewal(uint16_t seq, uint16_t degree_x16) noexcept;

  // The scheduler's verdict. Activation restores a full window of C credits beyond what was
  // consumed (never lowering the limit); deactivation stops further grants.
  void SetActive(bool active) noexcept {
    if (active && !active_ && limit_ < consumed_ + credits_) limit_ = consumed_ + credits_;
    active_ = active;
  }

  struct Usage {
    uint64_t utilization_x16 = 0;  // sum of reported coalescing degrees (1/16ths)
    uint64_t requests = 0;
  };
  // Usage since the previous call (one scheduling interval), and resets it.
  Usage TakeUsage() noexcept {
    Usage u{utilization_x16_, requests_since_take_};
    utilization_x16_ = 0;
    requests_since_take_ = 0;
    return u;
  }

 private:
  uint32_t credits_;
  uint64_t limit_;
  uint64_t consumed_ = 0;
  bool active_;
  uint64_t utilization_x16_ = 0;
  uint64_t requests_since_take_ = 0;
};

}  // namespace rdmq::rpc
