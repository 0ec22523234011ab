// RingConsumer on a ring filled by hand, with a fake clock: a message still in flight waits, one
// that stays incomplete past the timeout is stuck, and the clock is read only when the head holds
// bytes that are not a ready message. Also the spin -> yield -> park ladder of wait.h.
#include "rpc/ring_consumer.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "rpc/wait.h"
#include "rpc/wire.h"
#include "support/test_util.h"

namespace rdmq::rpc {
namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)
using State = RingConsumer::State;
using Clock = RingConsumer::Clock;

constexpr uint64_t kCap = 4096;

// 64-byte aligned memory for a ring and for a staged message.
struct Buf {
  explicit Buf(size_t n) : v(n / 8 + 8) {}
  std::byte* data() {
    const auto skew = reinterpret_cast<uintptr_t>(v.data()) % 64;
    return reinterpret_cast<std::byte*>(v.data()) + (64 - skew) % 64;
  }
  std::vector<uint64_t> v;
};

// A clock the test moves by hand; counts how often the consumer reads it.
struct FakeClock {
  Clock::time_point t{};
  int reads = 0;
  auto fn() {
    return [this] {
      ++reads;
      return t;
    };
  }
};

// Stages a one-entry message at ring position `position` (offset position % kCap); Body() and
// Canary() copy its two parts into the ring, as the peer's two WRITEs would.
struct Message {
  Message(Buf* ring, uint64_t position, const std::string& payload, uint64_t canary) : ring_(ring) {
    offset_ = position % kCap;
    MessageBuilder b(staging_.data(), 1024);
    b.Add({static_cast<uint32_t>(payload.size()), 7, 0, 1, 1}, std::as_bytes(std::span(payload)));
    MessageHeader h;
    h.canary = canary;
    h.position = position;
    length_ = b.Finish(h);
    used_ = b.used();
  }
  void Body() { std::memcpy(ring_->data() + offset_, staging_.data(), used_); }
  void Canary() {
    std::memcpy(ring_->data() + offset_ + length_ - kCanarySize, staging_.data() + length_ - kCanarySize,
                kCanarySize);
  }
  uint32_t length() const { return length_; }

 private:
  Buf* ring_;
  Buf staging_{1024};
  uint64_t offset_ = 0;
  uint32_t length_ = 0;
  uint32_t used_ = 0;
};

TEST_CASE("an empty ring is polled without reading the clock", "[rpc][ring_consumer]") {
  Buf ring(kCap);
  RingConsumer rc(ring.data(), kCap, false, 10ms);
  FakeClock clock;
  for (int i = 0; i < 100; ++i) CHECK(rc.Poll(clock.fn()).state == State::kEmpty);
  CHECK(clock.reads == 0);
  CHECK_FALSE(rc.HasWork());
  CHECK(rc.head() == 0);
  CHECK(rc.max_message() == kCap / 2);
  CHECK(rc.incomplete_timeout() == 10ms);
}

TEST_CASE("a message in flight waits, then is ready once its canary lands", "[rpc][ring_consumer]") {
  Buf ring(kCap);
  RingConsumer rc(ring.data(), kCap, false, 10ms);
  FakeClock clock;
  Message m(&ring, 0, "hello", 0x1234);
  m.Body();
  CHECK(rc.HasWork());  // not yet known to be waiting: a parking poller must look
  auto n = rc.Poll(clock.fn());
  CHECK(n.state == State::kWaiting);
  CHECK(n.probe == ProbeState::kIncomplete);
  CHECK(clock.reads == 1);
  CHECK_FALSE(rc.HasWork());  // known to be waiting: no reason to stay awake
  clock.t += 10ms;            // exactly the timeout: still waiting
  CHECK(rc.Poll(clock.fn()).state == State::kWaiting);
  m.Canary();
  CHECK(rc.HasWork());
  n = rc.Poll(clock.fn());
  REQUIRE(n.state == State::kReady);
  CHECK(clock.reads == 2);  // the ready path reads no clock
  CHECK(n.length == m.length());
  auto v = rc.Parse(n.length);
  REQUIRE_OK(v);
  CHECK(v->header().count == 1);
  rc.Release(n.length);
  CHECK(rc.head() == m.length());
  CHECK(rc.Poll(clock.fn()).state == State::kEmpty);

  // The stall clock restarted: the next message gets a full timeout of its own.
  Message m2(&ring, m.length(), "again", 0x5678);
  m2.Body();
  clock.t += 1h;
  CHECK(rc.Poll(clock.fn()).state == State::kWaiting);
  clock.t += 9ms;
  CHECK(rc.Poll(clock.fn()).state == State::kWaiting);
  m2.Canary();
  CHECK(rc.Poll(clock.fn()).state == State::kReady);
}

TEST_CASE("a message that stays incomplete past the timeout is stuck", "[rpc][ring_consumer]") {
  Buf ring(kCap);
  RingConsumer rc(ring.data(), kCap, true, 10ms);
  FakeClock clock;
  Message m(&ring, 0, "never finished", 0x9abc);
  m.Body();
  CHECK(rc.Poll(clock.fn()).state == State::kWaiting);
  clock.t += 10ms + 1ns;
  const auto n = rc.Poll(clock.fn());
  CHECK(n.state == State::kStuck);
  CHECK(n.probe == ProbeState::kIncomplete);
  // Stuck stays stuck (the owner closes the connection; nothing is consumed meanwhile).
  CHECK(rc.Poll(clock.fn()).state == State::kStuck);
  CHECK(rc.head() == 0);
}

TEST_CASE("bytes that never form a header are stuck after the timeout", "[rpc][ring_consumer]") {
  Buf ring(kCap);
  RingConsumer rc(ring.data(), kCap, false, 5ms);
  FakeClock clock;
  // A header claiming more than the largest message never becomes ready.
  Buf b(kCap);
  MessageBuilder mb(b.data(), kCap);
  mb.Add({3000, 1, 0, 1, 1});
  MessageHeader h;
  h.canary = 5;
  const uint32_t len = mb.Finish(h);
  REQUIRE(len > rc.max_message());
  std::memcpy(ring.data(), b.data(), len);
  auto n = rc.Poll(clock.fn());
  CHECK(n.state == State::kWaiting);
  CHECK(n.probe == ProbeState::kBadHeader);
  clock.t += 6ms;
  n = rc.Poll(clock.fn());
  CHECK(n.state == State::kStuck);
  CHECK(n.probe == ProbeState::kBadHeader);
  // The bytes go away (say, the ring was zeroed): the stall clock stops.
  std::memset(ring.data(), 0, len);
  CHECK(rc.Poll(clock.fn()).state == State::kEmpty);
  std::memcpy(ring.data(), b.data(), len);
  CHECK(rc.Poll(clock.fn()).state == State::kWaiting);
}

TEST_CASE("the idle ladder spins, then yields, then parks", "[rpc][wait]") {
  CHECK(NextIdleStep(0us, 5us, 50us) == IdleStep::kSpin);
  CHECK(NextIdleStep(4us, 5us, 50us) == IdleStep::kSpin);
  CHECK(NextIdleStep(5us, 5us, 50us) == IdleStep::kYield);
  CHECK(NextIdleStep(49us, 5us, 50us) == IdleStep::kYield);
  CHECK(NextIdleStep(50us, 5us, 50us) == IdleStep::kPark);
  // Parking comes first: a park threshold below the spin threshold means "park at once".
  CHECK(NextIdleStep(0us, 5us, 0us) == IdleStep::kPark);
  CHECK(NextIdleStep(3us, 5us, 2us) == IdleStep::kPark);
  // The round-based ladder only sleeps when told to (these return promptly either way).
  const Backoff spin_then_yield{2, 0, 0us};
  for (uint32_t r = 0; r < 5; ++r) spin_then_yield.Pause(r);
  const Backoff with_sleep{1, 2, 1us};
  for (uint32_t r = 0; r < 4; ++r) with_sleep.Pause(r);
}

}  // namespace
}  // namespace rdmq::rpc
