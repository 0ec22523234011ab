#include "rdmq/common/coding.h"

#include <catch2/catch.hpp>
#include <random>

namespace rdmq::coding {
namespace {

TEST_CASE("zigzag matches Kafka's encoding", "[coding]") {
  CHECK(ZigZag32(0) == 0);
  CHECK(ZigZag32(-1) == 1);
  CHECK(ZigZag32(1) == 2);
  CHECK(ZigZag32(-2) == 3);
  CHECK(ZigZag32(INT32_MAX) == 0xfffffffeu);
  CHECK(ZigZag32(INT32_MIN) == 0xffffffffu);
  CHECK(ZigZag64(INT64_MIN) == UINT64_MAX);
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{63}, int64_t{-64}, INT64_MAX, INT64_MIN}) {
    CHECK(UnZigZag64(ZigZag64(v)) == v);
  }
}

TEST_CASE("varints round trip and have the documented lengths", "[coding]") {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const int64_t v = static_cast<int64_t>(rng()) >> (rng() % 64);
    std::string buf;
    Writer w(&buf);
    w.VarintSigned(v);
    CHECK(buf.size() == VarintLengthSigned(v));
    Reader r(AsBytes(buf));
    CHECK(r.VarintSigned64() == v);
    CHECK(r.ok());
    CHECK(r.remaining() == 0);
  }
  CHECK(VarintLength(127) == 1);
  CHECK(VarintLength(128) == 2);
  CHECK(VarintLength(UINT64_MAX) == 10);
}

TEST_CASE("the reader fails cleanly on truncated and overlong input", "[coding]") {
  const std::byte three[] = {std::byte{1}, std::byte{2}, std::byte{3}};
  Reader r(three, sizeof three);
  CHECK(r.BE<uint16_t>() == 0x0102);
  CHECK(r.ok());
  CHECK(r.BE<uint16_t>() == 0);  // only one byte left
  CHECK_FALSE(r.ok());
  CHECK(r.U8() == 0);  // sticky
  CHECK(r.remaining() == 0);

  // A varint whose continuation bit never ends.
  std::byte endless[12];
  for (auto& b : endless) b = std::byte{0xff};
  Reader v(endless, sizeof endless);
  (void)v.Varint();
  CHECK_FALSE(v.ok());

  // A 32-bit varint may take at most 5 bytes.
  const std::byte six[] = {std::byte{0x80}, std::byte{0x80}, std::byte{0x80},
                           std::byte{0x80}, std::byte{0x80}, std::byte{0x01}};
  Reader s(six, sizeof six);
  (void)s.VarintSigned32();
  CHECK_FALSE(s.ok());

  // Bytes() longer than what remains fails and returns an empty span.
  Reader b(three, sizeof three);
  CHECK(b.Bytes(4).empty());
  CHECK_FALSE(b.ok());
}

TEST_CASE("fixed-width big and little endian", "[coding]") {
  std::byte b[8];
  StoreBE<uint32_t>(b, 0x01020304u);
  CHECK(b[0] == std::byte{1});
  CHECK(b[3] == std::byte{4});
  CHECK(LoadBE<uint32_t>(b) == 0x01020304u);
  StoreLE<uint64_t>(b, 0x0102030405060708ull);
  CHECK(b[0] == std::byte{8});
  CHECK(LoadLE<uint64_t>(b) == 0x0102030405060708ull);
  StoreBE<int64_t>(b, -2);
  CHECK(LoadBE<int64_t>(b) == -2);
}

}  // namespace
}  // namespace rdmq::coding
