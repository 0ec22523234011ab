// RingConsumer: the receiving end of a ring as its poller drives it (internal). It peeks the head,
// hands out complete messages, and tells a message still in flight from bytes that never become
// one: bytes at the head that stay incomplete (or never form a header) for longer than the
// incomplete-message timeout mean the peer broke the protocol (docs/rpc.md, "Bad input").
//
// Sans-I/O: time comes from a clock the caller passes (the steady clock by default), read only
// when the head holds bytes that are not a ready message, so the empty and ready paths cost what
// RingReader::Peek costs.
//
// Threading: thread-compatible; one poller owns it at a time (the client's poll-lock holder, the
// server's dispatcher).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "rdmq/common/status.h"
#include "rpc/ring.h"
#include "rpc/wire.h"

namespace rdmq::rpc {

class RingConsumer {
 public:
  using Clock = std::chrono::steady_clock;
  struct SteadyNow {
    Clock::time_point operator()() const noexcept { return Clock::now(); }
  };

  enum class State {
    kEmpty,    // nothing at the head
    kReady,    // a complete message of `length` bytes: Parse it, then Release it
    kWaiting,  // bytes that are not a ready message yet, for no longer than the timeout
    kStuck,    // the same, for longer than the timeout: the peer broke the protocol
  };
  struct Next {
    State state = State::kEmpty;
    uint32_t length = 0;                    // kReady: the message's length
    ProbeState probe = ProbeState::kEmpty;  // kWaiting/kStuck: what the head holds
  };

  // `ring`: the ring's memory (capacity bytes, 8-byte aligned), written by the peer; `responses`
  // as for RingReader.
  RingConsumer(std::byte* ring, uint64_t capacity, bool responses,
               Clock::duration incomplete_timeout) noexcept
      : reader_(ring, capacity, responses), timeout_(incomplete_timeout) {}

  // What is at the head now. `now()` is called only for kWaiting/kStuck; the first sight of
  // such bytes starts their stall clock, and any other answer stops it.
  template <class Now = SteadyNow>
  Next Poll(Now now = Now{}) {
    const Probe p = reader_.Peek();
    if (p.state == ProbeState::kEmpty) {
      stalled_ = false;
      return {State::kEmpty, 0, p.state};
    }
    if (p.state == ProbeState::kReady) {
      stalled_ = false;
      return {State::kReady, p.length, p.state};
    }
    const Clock::time_point t = now();
    if (!stalled_) {
      stalled_ = true;
      stall_since_ = t;
      return {State::kWaiting, 0, p.state};
    }
    return {t - stall_since_ > timeout_ ? State::kStuck : State::kWaiting, 0, p.state};
  }

  // Whether a Poll would find work: a ready message, or bytes at the head whose stall clock has
  // not started (a parking poller rechecks with this; bytes already known to be waiting would
  // only keep it awake). No side effects.
  bool HasWork() const noexcept {
    const Probe p = reader_.Peek();
    return p.state == ProbeState::kReady || (p.state != ProbeState::kEmpty && !stalled_);
  }

  // Validates the message Poll reported kReady (see RingReader::Parse).
  Result<MessageView> Parse(uint32_t length) const { return reader_.Parse(length); }
  // Consumes the message at the head (see RingReader::Release).
  void Release(uint32_t length) noexcept { reader_.Release(length); }

  uint64_t head() const noexcept { return reader_.head(); }
  uint64_t max_message() const noexcept { return reader_.max_message(); }
  Clock::duration incomplete_timeout() const noexcept { return timeout_; }

 private:
  RingReader reader_;
  Clock::duration timeout_;
  bool stalled_ = false;
  Clock::time_point stall_since_{};
};

}  // namespace rdmq::rpc
