// The ring's two ends, fed by hand: placement and wrap-around, free space with a cached head,
// and the reader's rule that only a message with both canaries in place is dispatched.
#include "rpc/ring.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "rdmq/common/coding.h"
#include "rdmq/rpc/errors.h"
#include "support/test_util.h"

namespace rdmq::rpc {
namespace {

struct Buf {
  explicit Buf(size_t n) : v(n / 8 + 8) {}
  std::byte* data() {
    auto p = reinterpret_cast<uintptr_t>(v.data());
    return reinterpret_cast<std::byte*>((p + 63) / 64 * 64);
  }
  std::vector<uint64_t> v;
};

TEST_CASE("producer places messages, pads before the end, and tracks free space", "[rpc][ring]") {
  RingProducer p(1024);
  CHECK(p.max_message() == 512);
  CHECK(p.free() == 1024);

  auto a = p.Reserve(384);
  REQUIRE(a);
  CHECK(a->pad_length == 0);
  CHECK(a->position == 0);
  CHECK(p.tail() == 384);
  auto b = p.Reserve(384);
  REQUIRE(b);
  CHECK(b->position == 384);
  CHECK(b->offset == 384);
  CHECK(p.free() == 256);
  // 320 bytes do not fit in the 256 left by the cached head.
  CHECK_FALSE(p.Reserve(320));
  CHECK(p.tail() == 768);
  // The consumer freed the first message: 640 free, but the next 320 bytes would straddle the
  // end (768 + 320 > 1024): a 256-byte pad goes first and the message lands at offset 0.
  REQUIRE(p.UpdateHead(384));
  CHECK(p.NeededFor(320) == 576);
  auto c = p.Reserve(320);
  REQUIRE(c);
  CHECK(c->pad_position == 768);
  CHECK(c->pad_length == 256);
  CHECK(c->position == 1024);
  CHECK(c->offset == 0);
  CHECK(p.tail() == 1344);
  CHECK(p.free() == 1024 - (1344 - 384));
  // Heads only move forward and never past the tail.
  CHECK(p.UpdateHead(100));
  CHECK(p.cached_head() == 384);
  CHECK_FALSE(p.UpdateHead(1345));
  CHECK(p.cached_head() == 384);
  CHECK(p.UpdateHead(1344));
  CHECK(p.free() == 1024);
}

TEST_CASE("a largest message always fits an empty ring, pad included", "[rpc][ring]") {
  for (uint64_t start = 0; start < 4096; start += 64) {
    RingProducer p(4096);
    if (start > 0) {
      REQUIRE(p.Reserve(start > 2048 ? 2048 : start));
      if (start > 2048) REQUIRE(p.Reserve(start - 2048));
    }
    REQUIRE(p.UpdateHead(p.tail()));
    CHECK(p.Reserve(p.max_message()));
  }
}

// Writes a message the way a sender does: the body (header and entries) first, the trailing
// canary as a second, later WRITE.
struct Sender {
  RingProducer prod;
  std::vector<std::byte>* ring_mem;
  Buf staging;
  std::mt19937_64* rng;

  Sender(uint64_t cap, std::vector<std::byte>* mem, std::mt19937_64* r)
      : prod(cap), ring_mem(mem), staging(cap), rng(r) {}

  struct Pending {
    uint64_t body_off, body_len, canary_off;
  };

  // Stages one message with the given payloads; returns the WRITEs to apply, or nothing.
  std::vector<Pending> Stage(const std::vector<std::string>& payloads, uint32_t first_seq) {
    uint64_t bytes = 0;
    for (const auto& s : payloads) bytes += EntryBytes(s.size());
    const uint64_t len = MessageLength(bytes);
    auto pl = prod.Reserve(len);
    if (!pl) return {};
    std::vector<Pending> w;
    if (pl->pad_length > 0) {
      const uint64_t off = pl->pad_position % prod.capacity();
      BuildPad(staging.data() + off, pl->pad_length, pl->pad_position, (*rng)() | 1, 0);
      w.push_back({off, kHeaderSize, off + pl->pad_length - kCanarySize});
    }
    MessageBuilder b(staging.data() + pl->offset, static_cast<uint32_t>(len));
    uint32_t seq = first_seq;
    for (const auto& s : payloads)
      b.Add({static_cast<uint32_t>(s.size()), 9, 0, 1, seq++}, std::as_bytes(std::span(s)));
    MessageHeader h;
    h.canary = (*rng)() | 1;
    h.position = pl->position;
    REQUIRE(b.Finish(h) == len);
    w.push_back({pl->offset, b.used(), pl->offset + len - kCanarySize});
    return w;
  }
  void WriteBody(const Pending& p) {
    std::memcpy(ring_mem->data() + p.body_off, staging.data() + p.body_off, p.body_len);
  }
  void WriteCanary(const Pending& p) {
    std::memcpy(ring_mem->data() + p.canary_off, staging.data() + p.canary_off, kCanarySize);
  }
};

TEST_CASE("a message whose trailing canary is not yet written is never dispatched", "[rpc][ring]") {
  std::mt19937_64 rng(test::TestSeed());
  const uint64_t cap = 4096;
  std::vector<std::byte> mem(cap);
  RingReader reader(mem.data(), cap, false);
  Sender s(cap, &mem, &rng);
  CHECK(reader.Peek().state == ProbeState::kEmpty);
  auto w = s.Stage({"first", "second"}, 1);
  REQUIRE(w.size() == 1);
  s.WriteBody(w[0]);
  const Probe pr = reader.Peek();
  CHECK(pr.state == ProbeState::kIncomplete);
  s.WriteCanary(w[0]);
  const Probe ready = reader.Peek();
  REQUIRE(ready.state == ProbeState::kReady);
  auto v = reader.Parse(ready.length);
  REQUIRE_OK(v);
  CHECK(v->header().count == 2);
  reader.Release(ready.length);
  CHECK(reader.head() == ready.length);
  CHECK(reader.Peek().state == ProbeState::kEmpty);
}

TEST_CASE("stale bytes from an earlier lap never read as a message", "[rpc][ring]") {
  std::mt19937_64 rng(test::TestSeed());
  const uint64_t cap = 1024;
  std::vector<std::byte> mem(cap);
  RingReader reader(mem.data(), cap, false);
  Sender s(cap, &mem, &rng);
  // Lap 1: one long message covering slots 0..5, consumed.
  auto w1 = s.Stage({std::string(300, 'x')}, 1);
  REQUIRE(w1.size() == 1);
  s.WriteBody(w1[0]);
  s.WriteCanary(w1[0]);
  Probe p1 = reader.Peek();
  REQUIRE(p1.state == ProbeState::kReady);
  reader.Release(p1.length);
  REQUIRE(s.prod.UpdateHead(reader.head()));
  // Fill the rest of lap 1 and come back around to offset 0 with a short message whose body
  // has landed but not its canary: the old long message's trailing canary is still in the
  // ring at its old place, yet the reader must wait.
  auto w2 = s.Stage({std::string(400, 'y')}, 2);  // 512 bytes: the largest message
  REQUIRE(w2.size() == 1);
  s.WriteBody(w2[0]);
  s.WriteCanary(w2[0]);
  Probe p2 = reader.Peek();
  REQUIRE(p2.state == ProbeState::kReady);
  reader.Release(p2.length);
  REQUIRE(s.prod.UpdateHead(reader.head()));
  auto w3 = s.Stage({std::string(200, 'z')}, 3);
  REQUIRE(!w3.empty());
  for (const auto& w : w3) {
    s.WriteBody(w);
    const Probe mid = reader.Peek();
    CHECK(mid.state != ProbeState::kReady);
    s.WriteCanary(w);
    Probe done = reader.Peek();
    REQUIRE(done.state == ProbeState::kReady);
    REQUIRE_OK(reader.Parse(done.length));
    reader.Release(done.length);
  }
}

TEST_CASE("ring round trip over many laps with random sizes and wrap-around", "[rpc][ring]") {
  std::mt19937_64 rng(test::TestSeed());
  const uint64_t cap = 8192;
  std::vector<std::byte> mem(cap);
  RingReader reader(mem.data(), cap, false);
  Sender s(cap, &mem, &rng);
  std::deque<std::pair<uint32_t, std::string>> expected;
  std::deque<Sender::Pending> in_flight;  // WRITEs staged but not applied yet
  uint32_t seq = 0;
  uint64_t pads = 0, messages = 0;
  const int steps = test::Trials(20000, 2000);
  for (int step = 0; step < steps; ++step) {
    const int action = static_cast<int>(rng() % 3);
    if (action == 0) {  // sender stages a message
      std::vector<std::string> payloads(1 + rng() % 4);
      for (auto& p : payloads) {
        p.resize(rng() % 700);
        for (auto& c : p) c = static_cast<char>('a' + rng() % 26);
      }
      auto ws = s.Stage(payloads, seq);
      if (ws.empty()) continue;  // no room by the cached head
      pads += ws.size() - 1;
      for (auto& p : payloads) expected.emplace_back(seq++, std::move(p));
      for (auto& w : ws) in_flight.push_back(w);
    } else if (action == 1 && !in_flight.empty()) {  // the fabric applies the oldest WRITEs
      const Sender::Pending w = in_flight.front();
      s.WriteBody(w);
      // If the reader is waiting at this message, the body alone must not make it ready.
      if (reader.head() % cap == w.body_off) CHECK(reader.Peek().state != ProbeState::kReady);
      s.WriteCanary(w);
      in_flight.pop_front();
    } else {  // the receiver polls
      Probe pr = reader.Peek();
      if (pr.state != ProbeState::kReady) continue;
      auto v = reader.Parse(pr.length);
      REQUIRE_OK(v);
      auto cur = v->entries();
      for (Entry e; cur.Next(&e);) {
        REQUIRE(!expected.empty());
        CHECK(e.meta.seq == expected.front().first);
        CHECK(std::string(reinterpret_cast<const char*>(e.data.data()), e.data.size()) ==
              expected.front().second);
        expected.pop_front();
      }
      ++messages;
      reader.Release(pr.length);
      // The head reaches the producer piggybacked, sometimes late.
      if (rng() % 3 != 0) REQUIRE(s.prod.UpdateHead(reader.head()));
    }
    // The producer never has more bytes outstanding than the ring holds.
    REQUIRE(s.prod.tail() - reader.head() <= cap);
  }
  INFO("messages " << messages << " pads " << pads);
  CHECK(messages > 0);
  CHECK(pads > 0);
}

TEST_CASE("garbage at the head is reported, never dispatched", "[rpc][ring]") {
  std::mt19937_64 rng(test::TestSeed());
  const uint64_t cap = 4096;
  std::vector<std::byte> mem(cap);
  RingReader reader(mem.data(), cap, false);
  for (int i = 0; i < test::Trials(2000, 200); ++i) {
    for (auto& b : mem) b = static_cast<std::byte>(rng());
    const Probe p = reader.Peek();
    if (p.state == ProbeState::kReady) {
      // Only possible if the junk happens to have a valid-looking header and matching canaries.
      CHECK(reader.Parse(p.length).status().is(RpcErrc::kCorruptMessage));
    } else if (coding::LoadLE<uint64_t>(mem.data()) != 0) {
      CHECK((p.state == ProbeState::kBadHeader || p.state == ProbeState::kIncomplete));
    }
  }
  // A header claiming more than the largest message is never "ready".
  std::fill(mem.begin(), mem.end(), std::byte{0});
  Buf b(4096);
  MessageBuilder mb(b.data(), 4096);
  mb.Add({3000, 1, 0, 1, 1});
  MessageHeader h;
  h.canary = 5;
  const uint32_t len = mb.Finish(h);
  REQUIRE(len > reader.max_message());
  std::memcpy(mem.data(), b.data(), len);
  CHECK(reader.Peek().state == ProbeState::kBadHeader);
}

}  // namespace
}  // namespace rdmq::rpc
