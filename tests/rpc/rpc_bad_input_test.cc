// Bad peers against a real server: a hand-rolled client that speaks the handshake and then
// WRITEs whatever it likes into its request ring. Each case must close that connection only,
// log why, and leave a well-behaved client (checked before, during and after) fully served.
#include <catch2/catch.hpp>
#include <random>
#include <thread>

#include "rdmq/common/coding.h"
#include "rpc/handshake.h"
#include "rpc/ring.h"
#include "rpc/wire.h"
#include "rpc_test_util.h"

namespace rdmq::rpc {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace)
using internal::kControlPage;

constexpr uint16_t kEcho = 1;

// One raw channel: the handshake done by hand, then direct WRITEs into the request ring.
struct RawClient {
  std::unique_ptr<fabric::CompletionQueue> cq;
  std::unique_ptr<fabric::CompletionQueue> rcq;
  std::unique_ptr<fabric::Region> resp;
  std::unique_ptr<fabric::Region> wake;
  std::unique_ptr<fabric::Region> src;
  std::unique_ptr<fabric::Endpoint> ep;
  std::unique_ptr<fabric::RemoteRegion> ring;
  internal::Welcome welcome;

  Status Open(fabric::Fabric& f, const std::string& address, uint64_t ring_bytes = 64 << 10) {
    RDMQ_ASSIGN_OR_RETURN(cq, f.CreateCompletionQueue(256));
    RDMQ_ASSIGN_OR_RETURN(rcq, f.CreateCompletionQueue(256));
    RDMQ_ASSIGN_OR_RETURN(resp, f.Allocate(kControlPage + ring_bytes,
                                           fabric::kLocalWrite | fabric::kRemoteRead | fabric::kRemoteWrite));
    RDMQ_ASSIGN_OR_RETURN(wake,
                          f.Allocate(internal::kWakeRegionBytes,
                                     fabric::kLocalWrite | fabric::kRemoteRead | fabric::kRemoteAtomic));
    RDMQ_ASSIGN_OR_RETURN(src, f.Allocate(kControlPage + ring_bytes, fabric::kLocalWrite));
    fabric::EndpointOptions eo;
    eo.send_cq = cq.get();
    eo.recv_cq = rcq.get();
    RDMQ_ASSIGN_OR_RETURN(ep, f.Connect(address, eo));
    internal::Hello h;
    h.request_ring = ring_bytes;
    h.response_ring = ring_bytes;
    RDMQ_ASSIGN_OR_RETURN(h.response_region, resp->Descriptor(fabric::kRemoteRead | fabric::kRemoteWrite));
    RDMQ_ASSIGN_OR_RETURN(h.wake_region, wake->Descriptor(fabric::kRemoteRead | fabric::kRemoteAtomic));
    RDMQ_RETURN_IF_ERROR(ep->SendControl(coding::AsBytes(internal::EncodeHello(h))));
    RDMQ_ASSIGN_OR_RETURN(auto msg, ep->RecvControl(5s));
    RDMQ_ASSIGN_OR_RETURN(welcome, internal::DecodeWelcome(msg));
    if (welcome.error != 0) return Status(Errc::kInternal, "refused: " + welcome.message);
    RDMQ_ASSIGN_OR_RETURN(ring, ep->Attach(welcome.request_region));
    std::vector<fabric::RecvRequest> rr(64);
    return ep->PostRecv(rr);
  }

  // WRITEs `bytes` at ring offset `off` (as body + separate last 8 bytes, like a real sender).
  Status Write(uint64_t off, std::span<const std::byte> bytes) {
    std::memcpy(src->data() + off, bytes.data(), bytes.size());
    fabric::WorkRequest w[2];
    size_t n = 0;
    const size_t body = bytes.size() > 8 ? bytes.size() - 8 : bytes.size();
    w[n].opcode = fabric::Opcode::kWrite;
    w[n].signaled = false;
    w[n].local = {src->data() + off, body, src.get()};
    w[n].remote = ring.get();
    w[n++].remote_offset = kControlPage + off;
    if (bytes.size() > 8) {
      w[n].opcode = fabric::Opcode::kWriteImm;  // also rings the doorbell on tcp
      w[n].imm = EncodeImm({ImmKind::kDoorbell, 0, 0});
      w[n].signaled = false;
      w[n].local = {src->data() + off + body, 8, src.get()};
      w[n].remote = ring.get();
      w[n++].remote_offset = kControlPage + off + body;
    }
    return ep->Post(std::span<const fabric::WorkRequest>(w, n));
  }

  // A well-formed request message at ring position `pos` with `count` requests to `handler`.
  std::vector<std::byte> Message(uint64_t pos, uint32_t count, uint16_t handler = kEcho) {
    std::vector<uint64_t> buf(4096);
    auto* p = reinterpret_cast<std::byte*>(buf.data());
    MessageBuilder mb(p, 32768);
    for (uint32_t i = 0; i < count; ++i) mb.Add({4, handler, 0, 0, i + 1}, B("abcd"));
    MessageHeader h;
    h.canary = 0x1234567 + pos;
    h.position = pos;
    const uint32_t len = mb.Finish(h);
    return std::vector<std::byte>(p, p + len);
  }

  // Waits until the server has closed this connection.
  bool WaitClosed(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (!ep->connected()) return true;
      std::this_thread::sleep_for(5ms);
    }
    return !ep->connected();
  }
};

struct BadRig {
  rdmq::test::TempDir dir{"rdmq-rpc-bad"};
  FabricPair fabrics;
  std::unique_ptr<Server> server;
  std::unique_ptr<Client> good;

  bool Start(fabric::Provider p) {
    auto fp = OpenPair(p, dir);
    if (!fp.ok()) return false;
    fabrics = std::move(fp).value();
    ServerOptions so;
    so.incomplete_message_timeout = 100ms;
    so.credits = 8;
    auto s = Server::Create(*fabrics.server, so);
    REQUIRE_OK(s);
    server = std::move(s).value();
    REQUIRE_OK(server->RegisterHandler(kEcho, EchoTransform()));
    REQUIRE_OK(server->Start());
    auto c = Client::Connect(*fabrics.client, fabrics.server->address());
    REQUIRE_OK(c);
    good = std::move(c).value();
    CheckGood("before");
    return true;
  }
  void CheckGood(const std::string& when) {
    INFO("well-behaved client, " << when);
    for (int i = 0; i < 20; ++i) {
      const std::string req = when + std::to_string(i);
      auto r = good->Call(kEcho, req, 5s);
      REQUIRE_OK(r);
      REQUIRE(*r == Transform(B(req)));
    }
  }
};

#define BAD_START_OR_SKIP(rig, provider) \
  BadRig rig;                            \
  if (!rig.Start(provider)) RDMQ_SKIP("fabric provider unavailable")

RPC_TEST_BOTH(RawClientWorks, "the raw test client's well-formed message is served", "[rpc][bad]") {
  BAD_START_OR_SKIP(rig, provider);
  RawClient raw;
  REQUIRE_OK(raw.Open(*rig.fabrics.client, rig.fabrics.server->address()));
  REQUIRE_OK(raw.Write(0, raw.Message(0, 2)));
  // Two responses arrive in the raw client's response ring.
  RingReader reader(raw.resp->data() + kControlPage, 64 << 10, true);
  Probe p;
  for (int i = 0; i < 1000; ++i) {
    p = reader.Peek();
    if (p.state == ProbeState::kReady) break;
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(p.state == ProbeState::kReady);
  auto v = reader.Parse(p.length);
  REQUIRE_OK(v);
  CHECK(v->header().count == 2);
  Entry e;
  auto cur = v->entries();
  REQUIRE(cur.Next(&e));
  CHECK(S(e.data) == Transform(B("abcd")));
  CHECK(raw.ep->connected());
  rig.CheckGood("after");
}

RPC_TEST_BOTH(CorruptHeader, "a complete message with a corrupt header closes that connection only",
              "[rpc][bad]") {
  BAD_START_OR_SKIP(rig, provider);
  RawClient raw;
  REQUIRE_OK(raw.Open(*rig.fabrics.client, rig.fabrics.server->address()));
  auto m = raw.Message(0, 1);
  coding::StoreLE<uint32_t>(m.data() + 24, 50);  // count: more entries than the message holds
  REQUIRE_OK(raw.Write(0, m));
  CHECK(raw.WaitClosed(5s));
  CHECK(rig.server->stats().protocol_errors == 1);
  rig.CheckGood("after a corrupt header");
}

RPC_TEST_BOTH(WrongPosition, "a message written at the wrong position closes the connection", "[rpc][bad]") {
  BAD_START_OR_SKIP(rig, provider);
  RawClient raw;
  REQUIRE_OK(raw.Open(*rig.fabrics.client, rig.fabrics.server->address()));
  REQUIRE_OK(raw.Write(0, raw.Message(4096, 1)));  // claims position 4096 at position 0
  CHECK(raw.WaitClosed(5s));
  rig.CheckGood("after a misplaced message");
}

RPC_TEST_BOTH(Garbage, "garbage in a ring closes that connection after the stall timeout", "[rpc][bad]") {
  BAD_START_OR_SKIP(rig, provider);
  RawClient raw;
  REQUIRE_OK(raw.Open(*rig.fabrics.client, rig.fabrics.server->address()));
  std::mt19937_64 rng(rdmq::test::TestSeed());
  std::vector<std::byte> junk(4096);
  for (auto& b : junk) b = static_cast<std::byte>(rng() | 1);
  REQUIRE_OK(raw.Write(0, junk));
  // Meanwhile the good client is served.
  rig.CheckGood("while garbage sits in another ring");
  CHECK(raw.WaitClosed(5s));
  CHECK(rig.server->stats().protocol_errors == 1);
  rig.CheckGood("after garbage");
}

RPC_TEST_BOTH(LongerThanRing, "a header claiming more than the ring holds closes the connection",
              "[rpc][bad]") {
  BAD_START_OR_SKIP(rig, provider);
  RawClient raw;
  REQUIRE_OK(raw.Open(*rig.fabrics.client, rig.fabrics.server->address()));
  auto m = raw.Message(0, 1);
  coding::StoreLE<uint32_t>(m.data() + 12, 1u << 30);  // length 1 GiB
  REQUIRE_OK(raw.Write(0, m));
  CHECK(raw.WaitClosed(5s));
  rig.CheckGood("after an oversized header");
}

RPC_TEST_BOTH(CreditViolation, "more requests than credits closes the connection", "[rpc][bad]") {
  BAD_START_OR_SKIP(rig, provider);
  RawClient raw;
  REQUIRE_OK(raw.Open(*rig.fabrics.client, rig.fabrics.server->address()));
  REQUIRE(raw.welcome.credit_limit == 8);
  REQUIRE_OK(raw.Write(0, raw.Message(0, 9)));  // 9 requests with 8 credits, no renewal
  CHECK(raw.WaitClosed(5s));
  CHECK(rig.server->stats().protocol_errors == 1);
  rig.CheckGood("after a credit violation");
}

RPC_TEST_BOTH(BadHandshake, "a junk handshake is refused and the server keeps accepting", "[rpc][bad]") {
  BAD_START_OR_SKIP(rig, provider);
  auto cq = rig.fabrics.client->CreateCompletionQueue(16);
  REQUIRE_OK(cq);
  fabric::EndpointOptions eo;
  eo.send_cq = cq->get();
  auto ep = rig.fabrics.client->Connect(rig.fabrics.server->address(), eo);
  REQUIRE_OK(ep);
  REQUIRE_OK((*ep)->SendControl(B("GET / HTTP/1.1\r\n\r\n")));
  auto reply = (*ep)->RecvControl(5s);
  if (reply.ok()) {
    auto w = internal::DecodeWelcome(*reply);
    REQUIRE_OK(w);
    CHECK(w->error != 0);
  }
  // A join with a made-up client id (or token) is refused too.
  {
    RawClient fake;
    REQUIRE_OK(fake.Open(*rig.fabrics.client, rig.fabrics.server->address()));  // regions to describe
    auto ep2 = rig.fabrics.client->Connect(rig.fabrics.server->address(), eo);
    REQUIRE_OK(ep2);
    internal::Hello h;
    h.kind = internal::HelloKind::kJoin;
    h.client_id = fake.welcome.client_id + 1000;
    h.token = 42;
    h.channels = 2;
    h.channel = 1;
    h.request_ring = 64 << 10;
    h.response_ring = 64 << 10;
    REQUIRE_OK(fake.resp->Descriptor(fabric::kRemoteRead | fabric::kRemoteWrite));
    h.response_region = *fake.resp->Descriptor(fabric::kRemoteRead | fabric::kRemoteWrite);
    h.wake_region = *fake.wake->Descriptor(fabric::kRemoteRead | fabric::kRemoteAtomic);
    REQUIRE_OK((*ep2)->SendControl(coding::AsBytes(internal::EncodeHello(h))));
    auto r2 = (*ep2)->RecvControl(5s);
    REQUIRE_OK(r2);
    auto w2 = internal::DecodeWelcome(*r2);
    REQUIRE_OK(w2);
    CHECK(w2->error != 0);
    CHECK(w2->message.find("no such client") != std::string::npos);
  }
  rig.CheckGood("after junk handshakes");
  // And a new client still gets in.
  RawClient raw;
  REQUIRE_OK(raw.Open(*rig.fabrics.client, rig.fabrics.server->address()));
}

}  // namespace
}  // namespace rdmq::rpc
