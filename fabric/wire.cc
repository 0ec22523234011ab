#include "wire.h"

#include "rdmq/common/coding.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal::wire {
namespace {
Status Bad(const std::string& what) { return Status(FabricErrc::kProtocol, what); }
constexpr size_t kMaxNode = 1024;
constexpr uint32_t kMaxErrc = 64;
}  // namespace

std::string EncodeHello(const Hello& h) {
  std::string out;
  coding::Writer w(&out);
  w.LE<uint32_t>(h.version);
  w.LE<uint32_t>(h.flags);
  w.LE<uint64_t>(h.endpoint_id);
  w.LE<uint32_t>(h.mailbox_capacity);
  w.LE<uint32_t>(h.aux);
  w.LE<uint16_t>(static_cast<uint16_t>(h.node.size()));
  w.Bytes(h.node);
  return out;
}

Result<Hello> DecodeHello(std::span<const std::byte> b) {
  coding::Reader r(b);
  Hello h;
  h.version = r.LE<uint32_t>();
  h.flags = r.LE<uint32_t>();
  h.endpoint_id = r.LE<uint64_t>();
  h.mailbox_capacity = r.LE<uint32_t>();
  h.aux = r.LE<uint32_t>();
  const uint16_t n = r.LE<uint16_t>();
  if (!r.ok()) return Bad("hello: truncated");
  if (h.version != kProtocolVersion) return Bad("hello: protocol version " + std::to_string(h.version));
  if (n > kMaxNode || r.remaining() != n) return Bad("hello: bad node length " + std::to_string(n));
  h.node.assign(coding::AsChars(r.Bytes(n)));
  return h;
}

std::string EncodeAttachRequest(const AttachRequest& a) {
  std::string out;
  coding::Writer w(&out);
  w.LE<uint64_t>(a.req_id);
  w.LE<uint64_t>(a.key);
  return out;
}

Result<AttachRequest> DecodeAttachRequest(std::span<const std::byte> b) {
  if (b.size() != 16) return Bad("attach request: " + std::to_string(b.size()) + " bytes, want 16");
  coding::Reader r(b);
  AttachRequest a;
  a.req_id = r.LE<uint64_t>();
  a.key = r.LE<uint64_t>();
  return a;
}

std::string EncodeAttachReply(const AttachReply& a) {
  std::string out;
  coding::Writer w(&out);
  w.LE<uint64_t>(a.req_id);
  w.LE<uint32_t>(a.errc);
  w.LE<uint32_t>(a.access);
  w.LE<uint64_t>(a.base);
  w.LE<uint64_t>(a.length);
  w.LE<uint64_t>(a.file_offset);
  w.LE<uint32_t>(a.slot);
  w.LE<uint32_t>(0);
  return out;
}

Result<AttachReply> DecodeAttachReply(std::span<const std::byte> b) {
  if (b.size() != 48) return Bad("attach reply: " + std::to_string(b.size()) + " bytes, want 48");
  coding::Reader r(b);
  AttachReply a;
  a.req_id = r.LE<uint64_t>();
  a.errc = r.LE<uint32_t>();
  a.access = r.LE<uint32_t>();
  a.base = r.LE<uint64_t>();
  a.length = r.LE<uint64_t>();
  a.file_offset = r.LE<uint64_t>();
  a.slot = r.LE<uint32_t>();
  if (r.LE<uint32_t>() != 0) return Bad("attach reply: reserved field not zero");
  if (a.errc > kMaxErrc) return Bad("attach reply: error code " + std::to_string(a.errc));
  if ((a.access & ~0xfu) != 0) return Bad("attach reply: access bits " + std::to_string(a.access));
  if (a.errc == 0 && a.length == 0) return Bad("attach reply: empty window");
  if (a.base + a.length < a.base || a.file_offset + a.length < a.file_offset)
    return Bad("attach reply: overflow");
  return a;
}

void EncodeMailboxEntry(std::byte* at, const MailboxEntry& e) {
  coding::StoreLE<uint32_t>(at, e.length);
  coding::StoreLE<uint16_t>(at + 4, e.kind);
  coding::StoreLE<uint16_t>(at + 6, e.flags);
  coding::StoreLE<uint32_t>(at + 8, e.imm);
  coding::StoreLE<uint32_t>(at + 12, e.total);
}

Result<MailboxEntry> DecodeMailboxEntry(std::span<const std::byte> at, size_t max_send) {
  if (at.size() < kEntryHeader) return Bad("mailbox: entry header crosses the ring end");
  MailboxEntry e;
  e.length = coding::LoadLE<uint32_t>(at.data());
  e.kind = coding::LoadLE<uint16_t>(at.data() + 4);
  e.flags = coding::LoadLE<uint16_t>(at.data() + 6);
  e.imm = coding::LoadLE<uint32_t>(at.data() + 8);
  e.total = coding::LoadLE<uint32_t>(at.data() + 12);
  if (e.total < kEntryHeader || e.total % 16 != 0 || e.total > at.size()) {
    return Bad("mailbox: entry of " + std::to_string(e.total) + " bytes with " + std::to_string(at.size()) +
               " to the ring end");
  }
  switch (e.kind) {
    case kEntrySend:
      if (e.length > max_send || e.total != MailboxEntryTotal(kEntrySend, e.length)) {
        return Bad("mailbox: SEND entry of " + std::to_string(e.length) + " bytes in " +
                   std::to_string(e.total));
      }
      break;
    case kEntryWriteImm:
      if (e.total != kEntryHeader) return Bad("mailbox: WRITE_IMM entry with a payload");
      break;
    case kEntryPad:
      break;
    default:
      return Bad("mailbox: unknown entry kind " + std::to_string(e.kind));
  }
  if ((e.flags & ~kEntryFlagImm) != 0) return Bad("mailbox: unknown entry flags");
  return e;
}

void EncodeTcpRequest(std::byte* out, const TcpRequest& r) {
  out[0] = static_cast<std::byte>(r.opcode);
  out[1] = static_cast<std::byte>(r.flags);
  coding::StoreLE<uint16_t>(out + 2, 0);
  coding::StoreLE<uint32_t>(out + 4, r.length);
  coding::StoreLE<uint64_t>(out + 8, r.seq);
  coding::StoreLE<uint64_t>(out + 16, r.key);
  coding::StoreLE<uint64_t>(out + 24, r.offset);
  coding::StoreLE<uint64_t>(out + 32, r.operand);
  coding::StoreLE<uint64_t>(out + 40, r.swap);
  coding::StoreLE<uint32_t>(out + 48, r.imm);
  coding::StoreLE<uint32_t>(out + 52, 0);
}

Result<TcpRequest> DecodeTcpRequest(std::span<const std::byte> f) {
  if (f.size() < kTcpRequestHeader) return Bad("tcp request: " + std::to_string(f.size()) + " bytes");
  TcpRequest r;
  const std::byte* p = f.data();
  r.opcode = static_cast<uint8_t>(p[0]);
  r.flags = static_cast<uint8_t>(p[1]);
  if (coding::LoadLE<uint16_t>(p + 2) != 0 || coding::LoadLE<uint32_t>(p + 52) != 0) {
    return Bad("tcp request: reserved field not zero");
  }
  r.length = coding::LoadLE<uint32_t>(p + 4);
  r.seq = coding::LoadLE<uint64_t>(p + 8);
  r.key = coding::LoadLE<uint64_t>(p + 16);
  r.offset = coding::LoadLE<uint64_t>(p + 24);
  r.operand = coding::LoadLE<uint64_t>(p + 32);
  r.swap = coding::LoadLE<uint64_t>(p + 40);
  r.imm = coding::LoadLE<uint32_t>(p + 48);
  const size_t payload = f.size() - kTcpRequestHeader;
  switch (static_cast<Opcode>(r.opcode)) {
    case Opcode::kWrite:
    case Opcode::kWriteImm:
      if (payload != r.length) return Bad("tcp request: WRITE payload does not match its length");
      break;
    case Opcode::kSend:
      if (payload != r.length || r.length > kMaxSendSize) return Bad("tcp request: bad SEND length");
      break;
    case Opcode::kRead:
    case Opcode::kFetchAdd:
    case Opcode::kCompareSwap:
      if (payload != 0) return Bad("tcp request: READ/atomic with a payload");
      break;
    default:
      return Bad("tcp request: unknown opcode " + std::to_string(r.opcode));
  }
  if ((r.flags & ~1u) != 0) return Bad("tcp request: unknown flags");
  return r;
}

void EncodeTcpResponse(std::byte* out, const TcpResponse& r) {
  coding::StoreLE<uint64_t>(out, r.seq);
  coding::StoreLE<uint32_t>(out + 8, r.errc);
  coding::StoreLE<uint32_t>(out + 12, r.length);
  coding::StoreLE<uint64_t>(out + 16, r.value);
}

Result<TcpResponse> DecodeTcpResponse(std::span<const std::byte> f) {
  if (f.size() < kTcpResponseHeader) return Bad("tcp response: " + std::to_string(f.size()) + " bytes");
  TcpResponse r;
  r.seq = coding::LoadLE<uint64_t>(f.data());
  r.errc = coding::LoadLE<uint32_t>(f.data() + 8);
  r.length = coding::LoadLE<uint32_t>(f.data() + 12);
  r.value = coding::LoadLE<uint64_t>(f.data() + 16);
  if (r.errc > kMaxErrc) return Bad("tcp response: error code " + std::to_string(r.errc));
  if (f.size() - kTcpResponseHeader != r.length)
    return Bad("tcp response: payload does not match its length");
  if (r.errc != 0 && r.length != 0) return Bad("tcp response: error with data");
  return r;
}

}  // namespace rdmq::fabric::internal::wire
