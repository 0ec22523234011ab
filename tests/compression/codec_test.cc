// The compression codecs (compression/codec.h): names and levels, round trips of random data,
// vectors made by the system tools (vectors.h), truncated and corrupt input, the output limit.
#include "rdmq/compression/codec.h"

#include <random>
#include <string>
#include <vector>

#include "rdmq/common/coding.h"
#include "support/test_util.h"
#include "vectors.h"

using namespace rdmq;
using namespace rdmq::compression;

namespace {

constexpr Codec kCodecs[] = {Codec::kGzip, Codec::kSnappy, Codec::kLz4, Codec::kZstd};

template <size_t N>
std::span<const std::byte> Bytes(const unsigned char (&a)[N]) {
  return {reinterpret_cast<const std::byte*>(a), N};
}
std::span<const std::byte> Bytes(const std::string& s) { return coding::AsBytes(s); }

// Words drawn from a small vocabulary (compressible) or uniform bytes (not), `n` bytes.
std::string RandomData(std::mt19937_64& rng, size_t n, bool compressible) {
  static const char* kWords[] = {"order ",   "user-17 ", "{\"id\":", "42, ",
                                 "payment ", "\n",       "kafka ",   "rdmq "};
  std::string s;
  s.reserve(n);
  while (s.size() < n) {
    if (compressible) {
      s += kWords[rng() % std::size(kWords)];
    } else {
      s.push_back(static_cast<char>(rng()));
    }
  }
  s.resize(n);
  return s;
}

std::string MustDecompress(Codec c, std::span<const std::byte> in, size_t max = 1 << 20) {
  auto r = Decompress(c, in, max);
  INFO(CodecName(c) << ": " << r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("codec names and ids", "[compression]") {
  for (int id = 0; id <= 4; ++id) {
    auto c = CodecFromId(id);
    REQUIRE_OK(c);
    CHECK(static_cast<int>(*c) == id);
    auto again = ParseCodec(CodecName(*c));
    REQUIRE_OK(again);
    CHECK(*again == *c);
  }
  CHECK(CodecName(Codec::kLz4) == "lz4");
  CHECK(CodecFromId(5).status().is(CompressionErrc::kUnknownCodec));
  CHECK(CodecFromId(-1).status().is(CompressionErrc::kUnknownCodec));
  const Status s = ParseCodec("brotli").status();
  CHECK(s.is(CompressionErrc::kUnknownCodec));
  CHECK(s.is(Errc::kInvalidArgument));
  CHECK(s.ToString().find("zstd") != std::string::npos);  // lists the choices
  CHECK_FALSE(ParseCodec("GZIP").ok());
}

TEST_CASE("compression levels", "[compression]") {
  for (Codec c : {Codec::kNone, Codec::kGzip, Codec::kSnappy, Codec::kLz4, Codec::kZstd}) {
    CHECK_OK(CheckLevel(c, kDefaultLevel));
  }
  CHECK_OK(CheckLevel(Codec::kGzip, 1));
  CHECK_OK(CheckLevel(Codec::kGzip, 9));
  CHECK(CheckLevel(Codec::kGzip, 10).is(CompressionErrc::kInvalidLevel));
  CHECK(CheckLevel(Codec::kGzip, 0).is(CompressionErrc::kInvalidLevel));
  CHECK_OK(CheckLevel(Codec::kLz4, 12));
  CHECK(CheckLevel(Codec::kLz4, 13).is(CompressionErrc::kInvalidLevel));
  CHECK_OK(CheckLevel(Codec::kZstd, -5));
  CHECK_OK(CheckLevel(Codec::kZstd, 22));
  CHECK(CheckLevel(Codec::kZstd, 23).is(CompressionErrc::kInvalidLevel));
  CHECK(CheckLevel(Codec::kSnappy, 1).is(CompressionErrc::kInvalidLevel));
  const std::string data(1000, 'x');
  CHECK(Compress(Codec::kGzip, Bytes(data), 11).status().is(CompressionErrc::kInvalidLevel));
  CHECK(Compress(static_cast<Codec>(7), Bytes(data)).status().is(CompressionErrc::kUnknownCodec));
  CHECK(Decompress(static_cast<Codec>(5), Bytes(data), 10).status().is(CompressionErrc::kUnknownCodec));
}

TEST_CASE("every codec round-trips random data at every size", "[compression]") {
  const uint64_t seed = test::TestSeed();
  INFO("RDMQ_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const size_t sizes[] = {0, 1, 7, 100, 4096, 65535, 65536, 65537, 300000, size_t{1} << 20};
  for (Codec c : kCodecs) {
    for (size_t n : sizes) {
      for (bool compressible : {true, false}) {
        const std::string data = RandomData(rng, n, compressible);
        auto z = Compress(c, Bytes(data));
        INFO(CodecName(c) << " " << n << " bytes, compressible " << compressible);
        REQUIRE_OK(z);
        if (compressible && n >= 4096) CHECK(z->size() < n / 2);
        CHECK(MustDecompress(c, Bytes(*z), n) == data);  // exactly at the limit
        if (n > 0) {
          auto over = Decompress(c, Bytes(*z), n - 1);
          CHECK(over.status().is(CompressionErrc::kOutputLimit));
        }
      }
    }
  }
}

TEST_CASE("levels change the output, not the content", "[compression]") {
  std::mt19937_64 rng(7);
  const std::string data = RandomData(rng, 200000, true);
  const std::pair<Codec, std::vector<int>> cases[] = {
      {Codec::kGzip, {1, 6, 9}}, {Codec::kLz4, {0, 3, 12}}, {Codec::kZstd, {-3, 1, 3, 19}}};
  for (const auto& [c, levels] : cases) {
    for (int level : levels) {
      auto z = Compress(c, Bytes(data), level);
      INFO(CodecName(c) << " level " << level);
      REQUIRE_OK(z);
      CHECK(MustDecompress(c, Bytes(*z)) == data);
    }
  }
}

TEST_CASE("vectors from the system tools decompress", "[compression]") {
  const std::string plain = vectors::kPlain;
  CHECK(MustDecompress(Codec::kGzip, Bytes(vectors::kGzip)) == plain);
  CHECK(MustDecompress(Codec::kGzip, Bytes(vectors::kGzipTwoMembers)) == plain + plain);
  CHECK(MustDecompress(Codec::kGzip, Bytes(vectors::kZlib)) == plain);
  CHECK(MustDecompress(Codec::kZstd, Bytes(vectors::kZstd)) == plain);
  CHECK(MustDecompress(Codec::kZstd, Bytes(vectors::kZstdStream)) == plain);
  CHECK(MustDecompress(Codec::kLz4, Bytes(vectors::kLz4)) == plain);
  CHECK(MustDecompress(Codec::kLz4, Bytes(vectors::kLz4Linked)) == plain);
  CHECK(MustDecompress(Codec::kSnappy, Bytes(vectors::kSnappyRaw)) == "hello hello hello hello!");
  CHECK(MustDecompress(Codec::kSnappy, Bytes(vectors::kSnappyJava)) == "hello hello hello hello!bye");
  // A zstd stream frame at a limit below its (unannounced) size: caught while decoding.
  CHECK(Decompress(Codec::kZstd, Bytes(vectors::kZstdStream), plain.size() - 1)
            .status()
            .is(CompressionErrc::kOutputLimit));
}

TEST_CASE("what rdmq writes is what Kafka clients read", "[compression]") {
  const std::string data(5000, 'k');
  // gzip: a gzip member (magic 1f 8b, deflate).
  auto gz = Compress(Codec::kGzip, Bytes(data));
  REQUIRE_OK(gz);
  CHECK(static_cast<unsigned char>((*gz)[0]) == 0x1f);
  CHECK(static_cast<unsigned char>((*gz)[1]) == 0x8b);
  CHECK((*gz)[2] == 8);
  // snappy: raw (starts with the length varint of 5000: 88 27), not the snappy-java framing.
  auto sn = Compress(Codec::kSnappy, Bytes(data));
  REQUIRE_OK(sn);
  CHECK(static_cast<unsigned char>((*sn)[0]) == 0x88);
  CHECK((*sn)[1] == 0x27);
  // lz4: frame magic 04 22 4d 18, FLG version 01 + independent blocks (0x60), BD 64 KiB (0x40).
  auto lz = Compress(Codec::kLz4, Bytes(data));
  REQUIRE_OK(lz);
  CHECK(coding::LoadLE<uint32_t>(lz->data()) == 0x184D2204u);
  CHECK(static_cast<unsigned char>((*lz)[4]) == 0x60);
  CHECK(static_cast<unsigned char>((*lz)[5]) == 0x40);
  // zstd: frame magic 28 b5 2f fd.
  auto zs = Compress(Codec::kZstd, Bytes(data));
  REQUIRE_OK(zs);
  CHECK(coding::LoadLE<uint32_t>(zs->data()) == 0xFD2FB528u);
}

TEST_CASE("truncated input is an error at every length", "[compression]") {
  const std::pair<Codec, std::span<const std::byte>> cases[] = {
      {Codec::kGzip, Bytes(vectors::kGzip)},        {Codec::kGzip, Bytes(vectors::kZlib)},
      {Codec::kZstd, Bytes(vectors::kZstd)},        {Codec::kZstd, Bytes(vectors::kZstdStream)},
      {Codec::kLz4, Bytes(vectors::kLz4)},          {Codec::kLz4, Bytes(vectors::kLz4Linked)},
      {Codec::kSnappy, Bytes(vectors::kSnappyRaw)},
  };
  for (const auto& [c, full] : cases) {
    for (size_t n = 0; n < full.size(); ++n) {
      const Status s = Decompress(c, full.first(n), 1 << 20).status();
      INFO(CodecName(c) << " cut to " << n << " of " << full.size() << " bytes: " << s.ToString());
      CHECK(s.is(Errc::kCorruption));
      CHECK(s.ToString().find(std::string(CodecName(c)) + ":") != std::string::npos);
    }
  }
  // snappy-java: a cut inside the header or a block is an error; at a block boundary it is the
  // blocks so far.
  const auto java = Bytes(vectors::kSnappyJava);
  for (size_t n = 0; n < java.size(); ++n) {
    auto r = Decompress(Codec::kSnappy, java.first(n), 1 << 20);
    INFO("snappy-java cut to " << n << ": " << r.status().ToString());
    if (n == 16) {
      REQUIRE_OK(r);
      CHECK(r->empty());
    } else if (n == 16 + 4 + sizeof vectors::kSnappyRaw) {
      REQUIRE_OK(r);
      CHECK(*r == "hello hello hello hello!");
    } else {
      CHECK(r.status().is(Errc::kCorruption));
    }
  }
}

TEST_CASE("corrupt input is an error or a different output, never a crash", "[compression]") {
  const uint64_t seed = test::TestSeed();
  INFO("RDMQ_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (Codec c : kCodecs) {
    const std::string data = RandomData(rng, 50000, true);
    auto z = Compress(c, Bytes(data));
    REQUIRE_OK(z);
    for (int trial = 0; trial < test::Trials(300, 50); ++trial) {
      std::string bad = *z;
      for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips) {
        bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
      }
      auto r = Decompress(c, Bytes(bad), 60000);
      if (!r.ok()) {
        INFO(r.status().ToString());
        CHECK((r.status().is(Errc::kCorruption) || r.status().is(CompressionErrc::kOutputLimit)));
      } else {
        CHECK(r->size() <= 60000);
      }
    }
  }
  // Garbage after a complete stream is refused.
  for (Codec c : kCodecs) {
    auto z = Compress(c, Bytes(std::string(100, 'a')));
    REQUIRE_OK(z);
    const std::string tail = *z + "junk";
    const Status s = Decompress(c, Bytes(tail), 1000).status();
    INFO(CodecName(c) << ": " << s.ToString());
    CHECK(s.is(Errc::kCorruption));
  }
}

TEST_CASE("a decompression bomb stops at the limit", "[compression]") {
  const std::string zeros(size_t{16} << 20, '\0');
  constexpr size_t kLimit = 1 << 20;
  for (Codec c : kCodecs) {
    auto z = Compress(c, Bytes(zeros));
    REQUIRE_OK(z);
    INFO(CodecName(c) << ": " << z->size() << " compressed bytes");
    std::string out;
    const Status s = DecompressInto(c, Bytes(*z), kLimit, &out);
    INFO(s.ToString());
    CHECK(s.is(CompressionErrc::kOutputLimit));
    CHECK(s.is(Errc::kResourceExhausted));
    CHECK(s.ToString().find("limit of 1048576 bytes") != std::string::npos);
    CHECK(out.size() <= kLimit + 1);
    CHECK(out.capacity() <= 2 * (kLimit + 1));
  }
  // Headers that announce more than the limit fail before allocating it.
  const unsigned char snappy_4g[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x00};
  CHECK(Decompress(Codec::kSnappy, Bytes(snappy_4g), kLimit).status().is(CompressionErrc::kOutputLimit));
  auto big = Compress(Codec::kZstd, Bytes(std::string(kLimit + 1, 'z')));  // announces its size
  REQUIRE_OK(big);
  const Status s = Decompress(Codec::kZstd, Bytes(*big), kLimit).status();
  CHECK(s.is(CompressionErrc::kOutputLimit));
  CHECK(s.ToString().find("announces 1048577 bytes") != std::string::npos);
}

TEST_CASE("none copies within the limit", "[compression]") {
  const std::string data = "plain records";
  auto z = Compress(Codec::kNone, Bytes(data));
  REQUIRE_OK(z);
  CHECK(*z == data);
  CHECK(MustDecompress(Codec::kNone, Bytes(data)) == data);
  CHECK(Decompress(Codec::kNone, Bytes(data), 3).status().is(CompressionErrc::kOutputLimit));
}

TEST_CASE("DecompressInto reuses the buffer it is given", "[compression]") {
  const std::string data(100000, 'q');
  auto z = Compress(Codec::kLz4, Bytes(data));
  REQUIRE_OK(z);
  std::string out = "old contents that must go";
  REQUIRE_OK(DecompressInto(Codec::kLz4, Bytes(*z), data.size(), &out));
  CHECK(out == data);
  const char* before = out.data();
  REQUIRE_OK(DecompressInto(Codec::kLz4, Bytes(*z), data.size(), &out));
  CHECK(out == data);
  CHECK(out.data() == before);
}
