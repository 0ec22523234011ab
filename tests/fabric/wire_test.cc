// The fabric's internal message codecs (fabric/wire.h): round trips and rejection of malformed
// input, without sockets.
#include "wire.h"

#include <cstring>
#include <vector>

#include "rdmq/common/coding.h"
#include "rdmq/fabric/fabric.h"
#include "support/test_util.h"

using namespace rdmq;
using namespace rdmq::fabric;
namespace wire = rdmq::fabric::internal::wire;

TEST_CASE("wire: hello round trip and rejection") {
  wire::Hello h;
  h.flags = 1;
  h.endpoint_id = 77;
  h.mailbox_capacity = 1 << 20;
  h.aux = 4791;
  h.node = "unix:/tmp/a.sock";
  const std::string b = wire::EncodeHello(h);
  auto back = wire::DecodeHello(coding::AsBytes(b));
  REQUIRE_OK(back);
  CHECK(back->endpoint_id == 77);
  CHECK(back->aux == 4791);
  CHECK(back->node == h.node);
  for (size_t cut = 0; cut < b.size(); ++cut) {
    CHECK(wire::DecodeHello(coding::AsBytes(b.substr(0, cut))).status().is(FabricErrc::kProtocol));
  }
  std::string bad_version = b;
  bad_version[0] = 9;
  CHECK(wire::DecodeHello(coding::AsBytes(bad_version)).status().is(FabricErrc::kProtocol));
  CHECK(wire::DecodeHello(coding::AsBytes(b + "extra")).status().is(FabricErrc::kProtocol));
}

TEST_CASE("wire: attach request and reply") {
  auto req = wire::DecodeAttachRequest(coding::AsBytes(wire::EncodeAttachRequest({5, 0xabcdef})));
  REQUIRE_OK(req);
  CHECK(req->req_id == 5);
  CHECK(req->key == 0xabcdef);
  CHECK(wire::DecodeAttachRequest(coding::AsBytes(std::string(15, 'x'))).status().is(FabricErrc::kProtocol));

  wire::AttachReply rep;
  rep.req_id = 9;
  rep.access = kRemoteRead;
  rep.base = 0x1000;
  rep.length = 4096;
  rep.file_offset = 8192;
  rep.slot = 3;
  auto back = wire::DecodeAttachReply(coding::AsBytes(wire::EncodeAttachReply(rep)));
  REQUIRE_OK(back);
  CHECK(back->length == 4096);
  CHECK(back->slot == 3);
  rep.length = 0;
  CHECK(wire::DecodeAttachReply(coding::AsBytes(wire::EncodeAttachReply(rep)))
            .status()
            .is(FabricErrc::kProtocol));
  rep.length = 10;
  rep.errc = 1000;
  CHECK(wire::DecodeAttachReply(coding::AsBytes(wire::EncodeAttachReply(rep)))
            .status()
            .is(FabricErrc::kProtocol));
  rep.errc = 0;
  rep.base = ~0ULL;
  CHECK(wire::DecodeAttachReply(coding::AsBytes(wire::EncodeAttachReply(rep)))
            .status()
            .is(FabricErrc::kProtocol));
}

TEST_CASE("wire: mailbox entries are validated against the ring") {
  std::vector<std::byte> ring(256);
  wire::EncodeMailboxEntry(ring.data(), {100, wire::kEntrySend, 0, 0, 16 + 112});
  auto e = wire::DecodeMailboxEntry(ring, kMaxSendSize);
  REQUIRE_OK(e);
  CHECK(e->length == 100);
  // Not enough room before the ring end for what the entry claims.
  CHECK(wire::DecodeMailboxEntry(std::span(ring).first(64), kMaxSendSize).status().is(FabricErrc::kProtocol));
  // Total inconsistent with the length.
  wire::EncodeMailboxEntry(ring.data(), {100, wire::kEntrySend, 0, 0, 16});
  CHECK(wire::DecodeMailboxEntry(ring, kMaxSendSize).status().is(FabricErrc::kProtocol));
  // Unaligned total, unknown kind, unknown flags, WRITE_IMM with payload.
  wire::EncodeMailboxEntry(ring.data(), {0, wire::kEntryPad, 0, 0, 24});
  CHECK(wire::DecodeMailboxEntry(ring, kMaxSendSize).status().is(FabricErrc::kProtocol));
  wire::EncodeMailboxEntry(ring.data(), {0, 77, 0, 0, 16});
  CHECK(wire::DecodeMailboxEntry(ring, kMaxSendSize).status().is(FabricErrc::kProtocol));
  wire::EncodeMailboxEntry(ring.data(), {0, wire::kEntryWriteImm, 8, 0, 16});
  CHECK(wire::DecodeMailboxEntry(ring, kMaxSendSize).status().is(FabricErrc::kProtocol));
  wire::EncodeMailboxEntry(ring.data(), {0, wire::kEntryWriteImm, 0, 0, 32});
  CHECK(wire::DecodeMailboxEntry(ring, kMaxSendSize).status().is(FabricErrc::kProtocol));
  wire::EncodeMailboxEntry(ring.data(), {5, wire::kEntryWriteImm, wire::kEntryFlagImm, 42, 16});
  e = wire::DecodeMailboxEntry(ring, kMaxSendSize);
  REQUIRE_OK(e);
  CHECK(e->imm == 42);
}

TEST_CASE("wire: tcp request and response frames") {
  wire::TcpRequest r;
  r.opcode = static_cast<uint8_t>(Opcode::kWrite);
  r.seq = 12;
  r.key = 0x55;
  r.offset = 4096;
  r.length = 3;
  std::vector<std::byte> f(wire::kTcpRequestHeader + 3);
  wire::EncodeTcpRequest(f.data(), r);
  auto back = wire::DecodeTcpRequest(f);
  REQUIRE_OK(back);
  CHECK(back->seq == 12);
  CHECK(back->offset == 4096);
  // Payload length must match.
  f.push_back(std::byte{0});
  CHECK(wire::DecodeTcpRequest(f).status().is(FabricErrc::kProtocol));
  // READ with payload, unknown opcode, oversized SEND.
  r.opcode = static_cast<uint8_t>(Opcode::kRead);
  wire::EncodeTcpRequest(f.data(), r);
  CHECK(wire::DecodeTcpRequest(f).status().is(FabricErrc::kProtocol));
  r.opcode = 99;
  wire::EncodeTcpRequest(f.data(), r);
  CHECK(
      wire::DecodeTcpRequest(std::span(f).first(wire::kTcpRequestHeader)).status().is(FabricErrc::kProtocol));
  r.opcode = static_cast<uint8_t>(Opcode::kSend);
  r.length = kMaxSendSize + 1;
  std::vector<std::byte> big(wire::kTcpRequestHeader + kMaxSendSize + 1);
  wire::EncodeTcpRequest(big.data(), r);
  CHECK(wire::DecodeTcpRequest(big).status().is(FabricErrc::kProtocol));

  wire::TcpResponse resp{7, 0, 2, 99};
  std::vector<std::byte> rf(wire::kTcpResponseHeader + 2);
  wire::EncodeTcpResponse(rf.data(), resp);
  auto rb = wire::DecodeTcpResponse(rf);
  REQUIRE_OK(rb);
  CHECK(rb->value == 99);
  resp.errc = static_cast<uint32_t>(FabricErrc::kBadKey);
  wire::EncodeTcpResponse(rf.data(), resp);
  CHECK(wire::DecodeTcpResponse(rf).status().is(FabricErrc::kProtocol));  // error with data
  CHECK(wire::DecodeTcpResponse(std::span(rf).first(10)).status().is(FabricErrc::kProtocol));
}

TEST_CASE("wire: tcp headers decoded alone, for payloads received in place") {
  wire::TcpRequest r;
  r.opcode = static_cast<uint8_t>(Opcode::kWriteImm);
  r.seq = 5;
  r.key = 0x77;
  r.length = 1u << 20;
  r.imm = 9;
  std::vector<std::byte> h(wire::kTcpRequestHeader);
  wire::EncodeTcpRequest(h.data(), r);
  auto back = wire::DecodeTcpRequest(h, r.length);
  REQUIRE_OK(back);
  CHECK(back->length == r.length);
  CHECK(back->imm == 9);
  // The payload still to come must be the one the header announces; a header is exactly one.
  CHECK(wire::DecodeTcpRequest(h, r.length - 1).status().is(FabricErrc::kProtocol));
  CHECK(wire::DecodeTcpRequest(std::span(h).first(40), r.length).status().is(FabricErrc::kProtocol));
  h.push_back(std::byte{0});
  CHECK(wire::DecodeTcpRequest(h, r.length).status().is(FabricErrc::kProtocol));

  wire::TcpResponse resp{3, 0, 65536, 0};
  std::vector<std::byte> rh(wire::kTcpResponseHeader);
  wire::EncodeTcpResponse(rh.data(), resp);
  REQUIRE_OK(wire::DecodeTcpResponse(rh, 65536));
  CHECK(wire::DecodeTcpResponse(rh, 65535).status().is(FabricErrc::kProtocol));
  resp.errc = static_cast<uint32_t>(FabricErrc::kOutOfBounds);
  wire::EncodeTcpResponse(rh.data(), resp);
  CHECK(wire::DecodeTcpResponse(rh, 65536).status().is(FabricErrc::kProtocol));  // error with data
}
