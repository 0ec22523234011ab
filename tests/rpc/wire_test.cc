// The message codec: layout, round trips, and every kind of malformed message.
#include "rpc/wire.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rdmq/common/coding.h"
#include "rdmq/rpc/errors.h"
#include "support/test_util.h"

namespace rdmq::rpc {
namespace {

using coding::LoadLE;
using coding::StoreLE;

// A 64-byte aligned scratch buffer.
struct Buf {
  explicit Buf(size_t n) : v((n + 63) / 8 + 8) {}
  std::byte* data() {
    auto p = reinterpret_cast<uintptr_t>(v.data());
    return reinterpret_cast<std::byte*>((p + 63) / 64 * 64);
  }
  std::vector<uint64_t> v;
};

std::vector<std::byte> Bytes(std::string_view s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

TEST_CASE("a request message has the documented byte layout", "[rpc][wire]") {
  Buf buf(256);
  MessageBuilder b(buf.data(), 256);
  const auto data = Bytes("hello");
  REQUIRE(b.Fits(data.size()));
  b.Add({5, 7, 0, 3, 42}, data);
  MessageHeader h;
  h.canary = 0x1122334455667788ull;
  h.position = 4096;
  h.peer_head = 640;
  const uint32_t len = b.Finish(h);
  // 48 header + 16 meta + 8 data (5 padded) + 8 canary = 80 -> 128.
  CHECK(len == 128);
  CHECK(b.used() == 48 + 16 + 8);
  const std::byte* p = buf.data();
  CHECK(LoadLE<uint64_t>(p + 0) == h.canary);
  CHECK(LoadLE<uint16_t>(p + 8) == 0x7172);
  CHECK(static_cast<char>(p[8]) == 'r');
  CHECK(static_cast<char>(p[9]) == 'q');
  CHECK(LoadLE<uint8_t>(p + 10) == 1);
  CHECK(LoadLE<uint8_t>(p + 11) == 0);
  CHECK(LoadLE<uint32_t>(p + 12) == 128);
  CHECK(LoadLE<uint64_t>(p + 16) == 4096);
  CHECK(LoadLE<uint32_t>(p + 24) == 1);
  CHECK(LoadLE<uint32_t>(p + 28) == 0);
  CHECK(LoadLE<uint64_t>(p + 32) == 640);
  CHECK(LoadLE<uint64_t>(p + 40) == 0);
  CHECK(LoadLE<uint32_t>(p + 48) == 5);
  CHECK(LoadLE<uint16_t>(p + 52) == 7);
  CHECK(LoadLE<uint16_t>(p + 54) == 0);
  CHECK(LoadLE<uint32_t>(p + 56) == 3);
  CHECK(LoadLE<uint32_t>(p + 60) == 42);
  CHECK(std::memcmp(p + 64, "hello\0\0\0", 8) == 0);
  for (int i = 72; i < 120; ++i) CHECK(p[i] == std::byte{0});
  CHECK(LoadLE<uint64_t>(p + 120) == h.canary);
}

TEST_CASE("messages round trip through ParseMessage", "[rpc][wire]") {
  const uint64_t seed = test::TestSeed();
  std::mt19937_64 rng(seed);
  const uint32_t max_len = 16384;
  Buf buf(max_len);
  for (int trial = 0; trial < test::Trials(2000, 100); ++trial) {
    MessageBuilder b(buf.data(), max_len);
    std::vector<std::pair<EntryMeta, std::string>> sent;
    const bool response = rng() % 2 == 0;
    for (;;) {
      std::string payload(rng() % 600, '\0');
      for (auto& c : payload) c = static_cast<char>(rng());
      if (!b.Fits(payload.size()) || sent.size() >= 40) break;
      EntryMeta m{static_cast<uint32_t>(payload.size()), static_cast<uint16_t>(rng()),
                  static_cast<uint16_t>(response ? rng() : 0), static_cast<uint32_t>(rng()),
                  static_cast<uint32_t>(rng())};
      b.Add(m, std::as_bytes(std::span(payload)));
      sent.emplace_back(m, payload);
      if (rng() % 8 == 0) break;
    }
    MessageHeader h;
    h.canary = rng() | 1;
    h.position = (rng() % 100000) * 64;
    h.flags = response ? static_cast<uint8_t>(kFlagResponse | (rng() % 2 ? kFlagActive : 0)) : 0;
    h.credit_seq = response ? static_cast<uint32_t>(rng() % 16384) : 0;
    h.peer_head = rng();
    h.credit_limit = response ? rng() : 0;
    const uint32_t len = b.Finish(h);
    REQUIRE(len % kMessageAlign == 0);
    REQUIRE(len <= max_len);
    auto view = ParseMessage({buf.data(), len}, h.position, response);
    REQUIRE_OK(view);
    CHECK(view->header().count == sent.size());
    CHECK(view->header().canary == h.canary);
    CHECK(view->header().peer_head == h.peer_head);
    CHECK(view->header().credit_limit == h.credit_limit);
    CHECK(view->header().credit_seq == h.credit_seq);
    CHECK(view->header().flags == h.flags);
    auto cur = view->entries();
    Entry e;
    for (const auto& [m, payload] : sent) {
      REQUIRE(cur.Next(&e));
      CHECK(e.meta.size == m.size);
      CHECK(e.meta.handler == m.handler);
      CHECK(e.meta.status == m.status);
      CHECK(e.meta.thread == m.thread);
      CHECK(e.meta.seq == m.seq);
      CHECK(std::string(reinterpret_cast<const char*>(e.data.data()), e.data.size()) == payload);
    }
    CHECK_FALSE(cur.Next(&e));
  }
}

// Builds a valid one-entry request at `p` and returns its length.
uint32_t BuildOne(std::byte* p, uint64_t position, uint64_t canary = 0xabcdef0123456789ull) {
  MessageBuilder b(p, 1024);
  const auto data = Bytes("0123456789abcdef");
  b.Add({16, 1, 0, 2, 3}, data);
  MessageHeader h;
  h.canary = canary;
  h.position = position;
  return b.Finish(h);
}

bool IsCorrupt(const Result<MessageView>& r) { return !r.ok() && r.status().is(RpcErrc::kCorruptMessage); }

TEST_CASE("ParseMessage rejects every malformed header and entry", "[rpc][wire]") {
  Buf buf(1024);
  std::byte* p = buf.data();
  const uint32_t len = BuildOne(p, 128);
  REQUIRE_OK(ParseMessage({p, len}, 128, false));

  SECTION("wrong direction") { CHECK(IsCorrupt(ParseMessage({p, len}, 128, true))); }
  SECTION("wrong position (a stale or misplaced message)") {
    auto r = ParseMessage({p, len}, 192, false);
    CHECK(IsCorrupt(r));
    CHECK(r.status().ToString().find("position 128") != std::string::npos);
  }
  SECTION("trailing canary differs") {
    StoreLE<uint64_t>(p + len - 8, 77);
    CHECK(IsCorrupt(ParseMessage({p, len}, 128, false)));
  }
  SECTION("zero canary") {
    StoreLE<uint64_t>(p, 0);
    StoreLE<uint64_t>(p + len - 8, 0);
    CHECK(IsCorrupt(ParseMessage({p, len}, 128, false)));
  }
  SECTION("bad magic") {
    p[8] = std::byte{'x'};
    CHECK(IsCorrupt(ParseMessage({p, len}, 128, false)));
  }
  SECTION("bad version") {
    p[10] = std::byte{9};
    CHECK(IsCorrupt(ParseMessage({p, len}, 128, false)));
  }
  SECTION("unknown flag") {
    p[11] = std::byte{0x80};
    CHECK(IsCorrupt(ParseMessage({p, len}, 128, false)));
  }
  SECTION("credit flags on a request") {
    p[11] = std::byte{kFlagCredit};
    CHECK(IsCorrupt(ParseMessage({p, len}, 128, false)));
  }
  SECTION("length disagrees with the bytes given") {
    StoreLE<uint32_t>(p + 12, len + 64);
    CHECK(IsCorrupt(ParseMessage({p, len}, 128, false)));
  }
  SECTION("odd number of bytes") { CHECK(IsCorrupt(ParseMessage({p, len - 8}, 128, false))); }
  SECTION("too short") { CHECK(IsCorrupt(ParseMessage({p, 32}, 128, false))); }
  SECTION("count larger than the message can hold") {
    StoreLE<uint32_t>(p + 24, 1000);
    CHECK(IsCorrupt(ParseMessage({p, len}, 128, false)));
  }
  SECTION("a later entry's meta past the end") {
    // Zero padding reads as empty entries: the 2nd and 3rd fit, the 4th's meta does not.
    StoreLE<uint32_t>(p + 24, 4);
    CHECK(IsCorrupt(ParseMessage({p, len}, 128, false)));
  }
  SECTION("entry size runs past the end") {
    StoreLE<uint32_t>(p + 48, 4000);
    auto r = ParseMessage({p, len}, 128, false);
    CHECK(IsCorrupt(r));
    CHECK(r.status().ToString().find("entry 0") != std::string::npos);
  }
  SECTION("entry size overflowing 32 bits with padding") {
    StoreLE<uint32_t>(p + 48, 0xffffffffu);
    CHECK(IsCorrupt(ParseMessage({p, len}, 128, false)));
  }
  SECTION("a request carrying a status") {
    StoreLE<uint16_t>(p + 54, 1);
    CHECK(IsCorrupt(ParseMessage({p, len}, 128, false)));
  }
  SECTION("pad with entries") {
    p[11] = std::byte{kFlagPad};
    CHECK(IsCorrupt(ParseMessage({p, len}, 128, false)));
  }
}

TEST_CASE("pad messages are header plus canary", "[rpc][wire]") {
  Buf buf(512);
  std::memset(buf.data(), 0x5a, 512);
  BuildPad(buf.data(), 512, 1024, 99, 0);
  auto v = ParseMessage({buf.data(), 512}, 1024, false);
  REQUIRE_OK(v);
  CHECK((v->header().flags & kFlagPad) != 0);
  CHECK(v->header().count == 0);
  Entry e;
  auto cur = v->entries();
  CHECK_FALSE(cur.Next(&e));
}

TEST_CASE("entry size limits follow the ring's largest message", "[rpc][wire]") {
  CHECK(EntryBytes(0) == 16);
  CHECK(EntryBytes(1) == 24);
  CHECK(EntryBytes(8) == 24);
  CHECK(MessageLength(0) == 64);
  CHECK(MessageLength(8) == 64);
  CHECK(MessageLength(9) == 128);
  const uint64_t max = 4096;
  const uint64_t d = MaxEntryData(max);
  CHECK(MessageLength(EntryBytes(d)) <= max);
  CHECK(MessageLength(EntryBytes(d + 8)) > max);
  Buf buf(max);
  MessageBuilder b(buf.data(), max);
  CHECK(b.Fits(d));
  CHECK_FALSE(b.Fits(d + 1));
}

TEST_CASE("immediates encode kind, sequence and degree", "[rpc][wire]") {
  const uint32_t raw = EncodeImm({ImmKind::kCreditRenewal, 0x3fff, DegreeToWire(2.5)});
  Imm imm;
  REQUIRE(DecodeImm(raw, &imm));
  CHECK(imm.kind == ImmKind::kCreditRenewal);
  CHECK(imm.seq == 0x3fff);
  CHECK(imm.value == 40);
  CHECK(raw == (1u << 30 | 0x3fffu << 16 | 40u));
  CHECK(EncodeImm({ImmKind::kDoorbell, 0, 0}) == 0);
  CHECK(DegreeToWire(1e9) == 65535);
  CHECK(DegreeToWire(-1) == 0);
  CHECK_FALSE(DecodeImm(3u << 30, &imm));
  CHECK_FALSE(DecodeImm(2u << 30, &imm));
  // The sequence wraps at 14 bits.
  REQUIRE(DecodeImm(EncodeImm({ImmKind::kCreditRenewal, 0x4001, 1}), &imm));
  CHECK(imm.seq == 1);
}

}  // namespace
}  // namespace rdmq::rpc
