#include <random>

#include "rdmq/common/coding.h"
#include "rdmq/fabric/fabric.h"
#include "support/test_util.h"

using namespace rdmq;
using namespace rdmq::fabric;

namespace {
RegionDescriptor Sample() {
  RegionDescriptor d;
  d.provider = Provider::kTcp;
  d.access = kRemoteRead | kRemoteWrite;
  d.key = 0x0123456789abcdefULL;
  d.base = 0x7f0000001000ULL;
  d.length = 1 << 20;
  d.node = "tcp:10.0.0.1:9092";
  return d;
}
std::span<const std::byte> B(const std::string& s) { return coding::AsBytes(s); }
}  // namespace

TEST_CASE("descriptor: encode/decode round trip for every provider") {
  for (Provider p : {Provider::kShm, Provider::kTcp, Provider::kVerbs}) {
    RegionDescriptor d = Sample();
    d.provider = p;
    d.node = p == Provider::kShm   ? "unix:/tmp/x.sock"
             : p == Provider::kTcp ? "tcp:h:1"
                                   : "verbs:10.0.2.15:7000";
    const std::string bytes = d.Encode();
    CHECK(bytes.size() == 44 + d.node.size());
    auto back = RegionDescriptor::Decode(B(bytes));
    REQUIRE_OK(back);
    CHECK(*back == d);
  }
  RegionDescriptor empty_node = Sample();
  empty_node.node.clear();
  auto back = RegionDescriptor::Decode(B(empty_node.Encode()));
  REQUIRE_OK(back);
  CHECK(*back == empty_node);
}

TEST_CASE("descriptor: byte layout is the documented one") {
  const std::string b = Sample().Encode();
  CHECK(b.substr(0, 4) == "RDMR");
  CHECK(static_cast<uint8_t>(b[4]) == 1);  // version
  CHECK(static_cast<uint8_t>(b[5]) == 2);  // tcp
  CHECK(coding::LoadLE<uint16_t>(b.data() + 6) == Sample().node.size());
  CHECK(coding::LoadLE<uint32_t>(b.data() + 8) == (kRemoteRead | kRemoteWrite));
  CHECK(coding::LoadLE<uint64_t>(b.data() + 16) == Sample().key);
  CHECK(coding::LoadLE<uint64_t>(b.data() + 24) == Sample().base);
  CHECK(coding::LoadLE<uint64_t>(b.data() + 32) == Sample().length);
  CHECK(b.substr(40, Sample().node.size()) == Sample().node);
}

TEST_CASE("descriptor: malformed bytes are rejected with kBadDescriptor") {
  const std::string good = Sample().Encode();
  auto expect_bad = [](const std::string& bytes) {
    auto r = RegionDescriptor::Decode(B(bytes));
    INFO("status: " << r.status());
    CHECK(r.status().is(FabricErrc::kBadDescriptor));
  };
  expect_bad("");
  expect_bad(good.substr(0, 43));
  for (size_t cut = 0; cut < good.size(); ++cut) expect_bad(good.substr(0, cut));
  expect_bad(good + "x");
  // Every single-bit flip is caught (by a field check or the CRC).
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string m = good;
      m[i] = static_cast<char>(m[i] ^ (1 << bit));
      expect_bad(m);
    }
  }
}

TEST_CASE("descriptor: field checks hold even with a valid CRC") {
  auto reencode = [](RegionDescriptor d) { return d.Encode(); };
  RegionDescriptor d = Sample();
  d.access = 0x10;
  CHECK(RegionDescriptor::Decode(B(reencode(d))).status().is(FabricErrc::kBadDescriptor));
  d = Sample();
  d.node = "unix:/wrong/scheme";
  CHECK(RegionDescriptor::Decode(B(reencode(d))).status().is(FabricErrc::kBadDescriptor));
  d = Sample();
  d.base = ~0ULL - 10;
  d.length = 100;
  CHECK(RegionDescriptor::Decode(B(reencode(d))).status().is(FabricErrc::kBadDescriptor));
  d = Sample();
  d.node = std::string("tcp:a\nb");
  CHECK(RegionDescriptor::Decode(B(reencode(d))).status().is(FabricErrc::kBadDescriptor));
  d = Sample();
  d.provider = static_cast<Provider>(9);
  CHECK(RegionDescriptor::Decode(B(reencode(d))).status().is(FabricErrc::kBadDescriptor));
  d = Sample();
  d.node = "tcp:" + std::string(2000, 'h');
  CHECK(RegionDescriptor::Decode(B(reencode(d))).status().is(FabricErrc::kBadDescriptor));
}

TEST_CASE("fabric: provider and opcode names") {
  for (Provider p : {Provider::kShm, Provider::kTcp, Provider::kVerbs}) {
    auto back = ParseProvider(ProviderName(p));
    REQUIRE_OK(back);
    CHECK(*back == p);
  }
  CHECK(ParseProvider("rdma").status().is(Errc::kInvalidArgument));
  CHECK(OpcodeName(Opcode::kWriteImm) == "WRITE_WITH_IMM");
  CHECK(OpcodeName(Opcode::kCompareSwap) == "COMPARE_SWAP");
}

TEST_CASE("fabric: error codes map onto the generic conditions") {
  CHECK(Status(FabricErrc::kBadKey).is(Errc::kPermissionDenied));
  CHECK(Status(FabricErrc::kRevoked).is(Errc::kPermissionDenied));
  CHECK(Status(FabricErrc::kOutOfBounds).is(Errc::kOutOfRange));
  CHECK(Status(FabricErrc::kPeerGone).is(Errc::kUnavailable));
  CHECK(Status(FabricErrc::kFlushed).is(Errc::kUnavailable));
  CHECK(Status(FabricErrc::kNoDevice).is(Errc::kUnsupported));
  CHECK(Status(FabricErrc::kQueueFull).is(Errc::kResourceExhausted));
}
