// Kafka primitive types (wire.h): every type both ways, boundaries, truncation at every byte,
// huge counts, malformed varints, tagged fields; the Writer's chunks, external spans and prefix.
#include "rdmq/kafka/wire.h"

#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "tests/kafka/kafka_test_util.h"
#include "tests/support/test_util.h"

namespace rdmq::kafka::test {
namespace {

TEST_CASE("kafka wire: fixed-width integers are big-endian", "[kafka]") {
  Writer w;
  w.Int8(-2);
  w.Int16(0x0102);
  w.Int32(-2);
  w.Int64(0x0102030405060708);
  w.UInt32(0xfffffffe);
  w.Bool(true);
  w.Bool(false);
  const Bytes b = w.Flatten();
  CHECK(b == Hex("fe 0102 fffffffe 0102030405060708 fffffffe 01 00"));

  Reader r(b);
  CHECK(r.Int8("a") == -2);
  CHECK(r.Int16("b") == 0x0102);
  CHECK(r.Int32("c") == -2);
  CHECK(r.Int64("d") == 0x0102030405060708);
  CHECK(r.UInt32("e") == 0xfffffffe);
  CHECK(r.Bool("f"));
  CHECK_FALSE(r.Bool("g"));
  REQUIRE_OK(r.ExpectEnd("all"));

  const Bytes nonzero = Hex("7f");
  Reader r2(nonzero);
  CHECK(r2.Bool("any non-zero byte is true"));
}

TEST_CASE("kafka wire: limits of every integer type survive a round trip", "[kafka]") {
  Writer w;
  for (int8_t v : {std::numeric_limits<int8_t>::min(), int8_t{0}, std::numeric_limits<int8_t>::max()})
    w.Int8(v);
  for (int16_t v : {std::numeric_limits<int16_t>::min(), int16_t{-1}, std::numeric_limits<int16_t>::max()})
    w.Int16(v);
  for (int32_t v : {std::numeric_limits<int32_t>::min(), -1, std::numeric_limits<int32_t>::max()}) {
    w.Int32(v);
    w.Varint(v);
  }
  for (int64_t v : {std::numeric_limits<int64_t>::min(), int64_t{-1}, std::numeric_limits<int64_t>::max()}) {
    w.Int64(v);
    w.Varlong(v);
  }
  for (uint32_t v : {0u, 127u, 128u, 16383u, 16384u, std::numeric_limits<uint32_t>::max()})
    w.UnsignedVarint(v);
  const Bytes b = w.Flatten();
  Reader r(b);
  for (int8_t v : {std::numeric_limits<int8_t>::min(), int8_t{0}, std::numeric_limits<int8_t>::max()}) {
    CHECK(r.Int8("i8") == v);
  }
  for (int16_t v : {std::numeric_limits<int16_t>::min(), int16_t{-1}, std::numeric_limits<int16_t>::max()}) {
    CHECK(r.Int16("i16") == v);
  }
  for (int32_t v : {std::numeric_limits<int32_t>::min(), -1, std::numeric_limits<int32_t>::max()}) {
    CHECK(r.Int32("i32") == v);
    CHECK(r.Varint("varint") == v);
  }
  for (int64_t v : {std::numeric_limits<int64_t>::min(), int64_t{-1}, std::numeric_limits<int64_t>::max()}) {
    CHECK(r.Int64("i64") == v);
    CHECK(r.Varlong("varlong") == v);
  }
  for (uint32_t v : {0u, 127u, 128u, 16383u, 16384u, std::numeric_limits<uint32_t>::max()}) {
    CHECK(r.UnsignedVarint("uvarint") == v);
  }
  REQUIRE_OK(r.ExpectEnd("all"));
}

TEST_CASE("kafka wire: varint encodings match Kafka's", "[kafka]") {
  auto uv = [](uint32_t v) {
    Writer w;
    w.UnsignedVarint(v);
    return w.Flatten();
  };
  CHECK(uv(0) == Hex("00"));
  CHECK(uv(1) == Hex("01"));
  CHECK(uv(127) == Hex("7f"));
  CHECK(uv(128) == Hex("8001"));
  CHECK(uv(300) == Hex("ac02"));
  CHECK(uv(0xffffffff) == Hex("ffffffff0f"));
  auto zz = [](int32_t v) {
    Writer w;
    w.Varint(v);
    return w.Flatten();
  };
  CHECK(zz(0) == Hex("00"));
  CHECK(zz(-1) == Hex("01"));
  CHECK(zz(1) == Hex("02"));
  CHECK(zz(-64) == Hex("7f"));
  CHECK(zz(64) == Hex("8001"));
  Writer w;
  w.Varlong(std::numeric_limits<int64_t>::min());
  CHECK(w.Flatten() == Hex("ffffffffffffffffff01"));
}

TEST_CASE("kafka wire: malformed varints are refused", "[kafka]") {
  struct Case {
    const char* hex;
    KafkaErrc code;
  };
  // Unsigned varint (32 bits): a sixth byte, or a fifth byte with bits beyond 32, or a cut.
  for (const Case& c :
       {Case{"ffffffff10", KafkaErrc::kBadVarint}, Case{"ffffffff8f01", KafkaErrc::kBadVarint},
        Case{"8080808080", KafkaErrc::kBadVarint}, Case{"80", KafkaErrc::kTruncated},
        Case{"", KafkaErrc::kTruncated}}) {
    const Bytes b = Hex(c.hex);
    Reader r(b);
    (void)r.UnsignedVarint("uv");
    INFO(c.hex);
    CHECK(r.status().is(c.code));
    Reader r2(b);
    (void)r2.Varint("v");
    CHECK(r2.status().is(c.code));
  }
  // Varlong: at most 10 bytes, the tenth carrying one bit.
  const Bytes ok_max = Hex("ffffffffffffffffff01");
  Reader r(ok_max);
  (void)r.Varlong("vl");
  CHECK(r.ok());
  for (const char* hex : {"ffffffffffffffffff02", "ffffffffffffffffff81", "ffffffffffffffffffff01"}) {
    const Bytes b = Hex(hex);
    Reader bad(b);
    (void)bad.Varlong("vl");
    INFO(hex);
    CHECK(bad.status().is(KafkaErrc::kBadVarint));
  }
  // Non-minimal encodings are legal (Kafka accepts them).
  const Bytes padded = Hex("8000");
  Reader p(padded);
  CHECK(p.UnsignedVarint("uv") == 0);
  CHECK_OK(p.ExpectEnd("padded"));
}

TEST_CASE("kafka wire: strings and bytes, classic and compact, null and not", "[kafka]") {
  Writer w;
  w.String("abc");
  w.NullableString(std::nullopt);
  w.NullableString("");
  w.CompactString("xy");
  w.CompactNullableString(std::nullopt);
  w.Bytes(Span("12"));
  w.NullableBytes(std::nullopt);
  w.CompactBytes(Span("z"));
  w.CompactNullableBytes(std::nullopt);
  Uuid u;
  for (size_t i = 0; i < u.size(); ++i) u[i] = static_cast<std::byte>(i);
  w.WriteUuid(u);
  const Bytes b = w.Flatten();
  CHECK(b ==
        Hex("0003'abc' ffff 0000 03'xy' 00 00000002'12' ffffffff 02'z' 00 000102030405060708090a0b0c0d0e0f"));

  Reader r(b);
  CHECK(r.String("s") == "abc");
  CHECK_FALSE(r.NullableString("ns").has_value());
  CHECK(r.NullableString("ns") == std::optional<std::string_view>(""));
  CHECK(r.CompactString("cs") == "xy");
  CHECK_FALSE(r.CompactNullableString("cns").has_value());
  CHECK(Str(r.Bytes("b")) == "12");
  CHECK_FALSE(r.NullableBytes("nb").has_value());
  CHECK(Str(r.CompactBytes("cb")) == "z");
  CHECK_FALSE(r.CompactNullableBytes("cnb").has_value());
  CHECK(r.ReadUuid("u") == u);
  REQUIRE_OK(r.ExpectEnd("all"));

  // Views point into the input.
  Reader v(b);
  const std::string_view s = v.String("s");
  CHECK(reinterpret_cast<const std::byte*>(s.data()) == b.data() + 2);
}

TEST_CASE("kafka wire: null where not nullable, negative lengths", "[kafka]") {
  struct Case {
    const char* hex;
    int which;  // 0 String, 1 Bytes, 2 CompactString, 3 CompactBytes, 4 NullableString, 5 NullableBytes
    KafkaErrc code;
  };
  for (const Case& c :
       {Case{"ffff", 0, KafkaErrc::kMalformed}, Case{"fffe", 0, KafkaErrc::kBadLength},
        Case{"ffffffff", 1, KafkaErrc::kMalformed}, Case{"80000000", 1, KafkaErrc::kBadLength},
        Case{"00", 2, KafkaErrc::kMalformed}, Case{"00", 3, KafkaErrc::kMalformed},
        Case{"8000", 4, KafkaErrc::kBadLength}, Case{"fffffffe", 5, KafkaErrc::kBadLength},
        Case{"7fff", 0, KafkaErrc::kTruncated}, Case{"7fffffff", 1, KafkaErrc::kTruncated},
        Case{"ffffffff0f", 2, KafkaErrc::kTruncated}}) {
    const Bytes b = Hex(c.hex);
    Reader r(b);
    switch (c.which) {
      case 0:
        (void)r.String("f");
        break;
      case 1:
        (void)r.Bytes("f");
        break;
      case 2:
        (void)r.CompactString("f");
        break;
      case 3:
        (void)r.CompactBytes("f");
        break;
      case 4:
        (void)r.NullableString("f");
        break;
      default:
        (void)r.NullableBytes("f");
        break;
    }
    INFO(c.hex << " as " << c.which << ": " << r.status().ToString());
    CHECK(r.status().is(c.code));
    CHECK(r.status().context().find("f at byte 0") == 0);
  }
}

TEST_CASE("kafka wire: truncation at every byte of every type fails and never reads past the end",
          "[kafka]") {
  Writer w;
  w.Int8(1);
  w.Int16(2);
  w.Int32(3);
  w.Int64(4);
  w.UInt32(5);
  w.Varint(-300000);
  w.Varlong(-30000000000);
  w.UnsignedVarint(300000);
  w.String("hello");
  w.CompactNullableString("world");
  w.NullableBytes(Span("bytes"));
  w.CompactBytes(Span("more"));
  w.ArrayLength(2);
  w.Int32(7);
  w.Int32(8);
  w.CompactArrayLength(1);
  w.Int16(9);
  w.UnsignedVarint(1);  // tagged fields: one
  w.UnsignedVarint(3);  // tag 3
  w.UnsignedVarint(2);  // 2 bytes
  w.Int16(10);
  Uuid u{};
  w.WriteUuid(u);
  const Bytes full = w.Flatten();

  auto read_all = [&](ByteSpan in) {
    // Copy into an exact-size heap buffer so ASan catches any read past the end.
    auto buf = std::make_unique<std::byte[]>(in.size());
    if (!in.empty()) std::memcpy(buf.get(), in.data(), in.size());
    Reader r(ByteSpan(buf.get(), in.size()));
    (void)r.Int8("i8");
    (void)r.Int16("i16");
    (void)r.Int32("i32");
    (void)r.Int64("i64");
    (void)r.UInt32("u32");
    (void)r.Varint("varint");
    (void)r.Varlong("varlong");
    (void)r.UnsignedVarint("uvarint");
    (void)r.String("string");
    (void)r.CompactNullableString("cnstring");
    (void)r.NullableBytes("nbytes");
    (void)r.CompactBytes("cbytes");
    const int32_t n = r.ArrayLength("array", 4);
    for (int32_t i = 0; i < n; ++i) (void)r.Int32("array[]");
    const int32_t m = r.CompactArrayLength("carray", 2);
    for (int32_t i = 0; i < m; ++i) (void)r.Int16("carray[]");
    int tags = 0;
    r.TaggedFields("tags", [&](uint32_t tag, ByteSpan data) {
      CHECK(tag == 3);
      CHECK(data.size() == 2);
      ++tags;
    });
    (void)r.ReadUuid("uuid");
    return r.ExpectEnd("all");
  };
  REQUIRE_OK(read_all(full));
  for (size_t n = 0; n < full.size(); ++n) {
    INFO("prefix " << n);
    const Status s = read_all(ByteSpan(full).first(n));
    CHECK(s.is(Errc::kCorruption));
  }
}

TEST_CASE("kafka wire: huge array counts fail before any allocation", "[kafka]") {
  for (const char* hex : {"7fffffff", "00100000 00000001", "80000000", "fffffffe"}) {
    const Bytes b = Hex(hex);
    Reader r(b);
    const int32_t n = r.ArrayLength("topics", 6);
    INFO(hex);
    CHECK(n == 0);
    CHECK(r.status().is(KafkaErrc::kBadLength));
    CHECK(r.status().context().find("topics at byte 0") == 0);
  }
  // Exactly as many elements as fit is fine; null is -1.
  const Bytes fits = Hex("00000002 0000 0000");
  Reader r(fits);
  CHECK(r.ArrayLength("a", 2) == 2);
  const Bytes null = Hex("ffffffff");
  Reader rn(null);
  CHECK(rn.ArrayLength("a", 2) == -1);
  CHECK(rn.ok());
  // Compact: 0 is null, N + 1 otherwise; the count is checked the same way.
  const Bytes compact = Hex("ffffffff0f");
  Reader rc(compact);
  CHECK(rc.CompactArrayLength("c", 1) == 0);
  CHECK(rc.status().is(KafkaErrc::kBadLength));
  const Bytes compact_null = Hex("00");
  Reader rcn(compact_null);
  CHECK(rcn.CompactArrayLength("c", 1) == -1);
}

TEST_CASE("kafka wire: tagged fields are skipped, must ascend, and are bounded", "[kafka]") {
  const Bytes ok = Hex("02 00 01 aa 05 00");
  Reader r(ok);
  std::vector<uint32_t> tags;
  r.TaggedFields("tags", [&](uint32_t tag, ByteSpan) { tags.push_back(tag); });
  REQUIRE_OK(r.ExpectEnd("tags"));
  CHECK(tags == std::vector<uint32_t>{0, 5});

  for (const char* hex : {"02 05 00 05 00", "02 05 00 01 00"}) {
    const Bytes b = Hex(hex);
    Reader bad(b);
    bad.SkipTaggedFields("tags");
    CHECK(bad.status().is(KafkaErrc::kMalformed));
  }
  const Bytes huge = Hex("ffffffff0f 00");
  Reader h(huge);
  h.SkipTaggedFields("tags");
  CHECK(h.status().is(KafkaErrc::kBadLength));
  const Bytes cut = Hex("01 00 05 aa");
  Reader c(cut);
  c.SkipTaggedFields("tags");
  CHECK(c.status().is(KafkaErrc::kTruncated));
}

TEST_CASE("kafka wire: the first failure sticks", "[kafka]") {
  const Bytes b = Hex("0001");
  Reader r(b);
  (void)r.Int32("first");
  CHECK_FALSE(r.ok());
  CHECK(r.Int16("second") == 0);
  CHECK(r.remaining() == 0);
  CHECK(r.status().context().find("first") == 0);
  CHECK(r.ExpectEnd("end").is(KafkaErrc::kTruncated));
}

TEST_CASE("kafka wire: writer chunks keep external spans by reference", "[kafka]") {
  const std::string big(100000, 'x');
  const std::string small = "tail";
  Writer w;
  w.ReserveSizePrefix();
  w.Int32(1);
  w.External(Span(big));
  w.Int16(2);
  w.External(Span(""));  // nothing
  w.External(Span(small));
  w.External(Span(small));
  REQUIRE_OK(w.FinishSizePrefix());
  CHECK(w.size() == 4 + 4 + big.size() + 2 + 2 * small.size());
  const auto chunks = w.chunks();
  REQUIRE(chunks.size() == 5);
  CHECK(chunks[0].size() == 8);
  CHECK(chunks[1].data() == reinterpret_cast<const std::byte*>(big.data()));
  CHECK(chunks[1].size() == big.size());
  CHECK(chunks[2].size() == 2);
  CHECK(chunks[3].data() == reinterpret_cast<const std::byte*>(small.data()));
  const Bytes flat = w.Flatten();
  CHECK(flat.size() == w.size());
  Reader r(flat);
  CHECK(r.Int32("size") == static_cast<int32_t>(w.size() - 4));
  CHECK(r.Int32("one") == 1);
}

TEST_CASE("kafka wire: owned chunks stay put while the writer grows", "[kafka]") {
  Writer w;
  w.String("first");
  const auto before = w.chunks();
  REQUIRE(before.size() == 1);
  const Bytes first(before[0].begin(), before[0].end());
  const std::byte* where = before[0].data();
  for (int i = 0; i < 100000; ++i) w.Int64(i);  // many new blocks
  const std::string long_text(70000, 'y');
  w.String(long_text.substr(0, 30000));
  w.Raw(Span(long_text));  // larger than any block
  const auto after = w.chunks();
  CHECK(after[0].data() == where);
  CHECK(Bytes(after[0].begin(), after[0].begin() + static_cast<long>(first.size())) == first);
  size_t total = 0;
  for (const auto& c : after) total += c.size();
  CHECK(total == w.size());
  CHECK(w.size() == 7 + 100000 * 8 + 2 + 30000 + long_text.size());

  // A moved-to writer keeps the blocks.
  Writer moved = std::move(w);
  CHECK(moved.chunks()[0].data() == where);
}

TEST_CASE("kafka wire: over-long strings are cut at the type's limit", "[kafka]") {
  const std::string s(40000, 'z');
  Writer w;
  w.String(s);
  const Bytes b = w.Flatten();
  Reader r(b);
  CHECK(r.String("s").size() == 32767);
  CHECK_OK(r.ExpectEnd("s"));
}

TEST_CASE("kafka wire: random bytes never crash the reader", "[kafka]") {
  std::mt19937_64 rng(rdmq::test::TestSeed());
  for (int trial = 0; trial < rdmq::test::Trials(2000); ++trial) {
    Bytes b(rng() % 64);
    for (auto& x : b) x = static_cast<std::byte>(rng());
    Reader r(b);
    while (r.ok() && r.remaining() > 0) {
      switch (rng() % 8) {
        case 0:
          (void)r.String("s");
          break;
        case 1:
          (void)r.CompactNullableBytes("b");
          break;
        case 2:
          (void)r.Varlong("v");
          break;
        case 3:
          r.SkipTaggedFields("t");
          break;
        case 4:
          (void)r.ArrayLength("a", 1 + rng() % 16);
          break;
        case 5:
          (void)r.NullableBytes("nb");
          break;
        case 6:
          (void)r.CompactArrayLength("ca", 1);
          break;
        default:
          (void)r.Int64("i");
          break;
      }
    }
  }
}

}  // namespace
}  // namespace rdmq::kafka::test
