#include "wire.h"

#include <cstring>

#include "rdmq/common/coding.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal::wire {
namespace {
Status Bad(const std::string& what) { return Status(FabricErrc::kProtocol, what); }
constexpr uint32_t kMaxErrc = 64;

// The bytes of a wire image.
template <class T>
std::string Bytes(const T& image) {
  static_assert(kWireImage<T>);
  return std::string(reinterpret_cast<const char*>(&image), sizeof image);
}
// The wire image at the start of `b` (which holds at least sizeof(T) bytes).
template <class T>
T Image(std::span<const std::byte> b) {
  static_assert(kWireImage<T>);
  T t;
  std::memcpy(&t, b.data(), sizeof t);
  return t;
}
}  // namespace

std::string EncodeHello(const Hello& h) {
  const auto n = static_cast<uint16_t>(h.node.size());
  std::string out = Bytes(static_cast<const HelloFixed&>(h));
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  return out + h.node;
}

Result<Hello> DecodeHello(std::span<const std::byte> b) {
  if (b.size() < kHelloHeader) return Bad("hello: truncated");
  Hello h;
  static_cast<HelloFixed&>(h) = Image<HelloFixed>(b);
  const auto n = coding::LoadLE<uint16_t>(b.data() + kHelloNodeLengthAt);
  if (h.version != kProtocolVersion) return Bad("hello: protocol version " + std::to_string(h.version));
  if (n > kMaxHelloNode || b.size() - kHelloHeader != n) {
    return Bad("hello: bad node length " + std::to_string(n));
  }
  h.node.assign(coding::AsChars(b.subspan(kHelloHeader)));
  return h;
}

std::string EncodeAttachRequest(const AttachRequest& a) { return Bytes(a); }

Result<AttachRequest> DecodeAttachRequest(std::span<const std::byte> b) {
  if (b.size() != sizeof(AttachRequest)) {
    return Bad("attach request: " + std::to_string(b.size()) + " bytes, want 16");
  }
  return Image<AttachRequest>(b);
}

std::string EncodeAttachReply(const AttachReply& a) {
  AttachReply image = a;
  image.reserved = 0;
  return Bytes(image);
}

Result<AttachReply> DecodeAttachReply(std::span<const std::byte> b) {
  if (b.size() != sizeof(AttachReply)) {
    return Bad("attach reply: " + std::to_string(b.size()) + " bytes, want 48");
  }
  const auto a = Image<AttachReply>(b);
  if (a.reserved != 0) return Bad("attach reply: reserved field not zero");
  if (a.errc > kMaxErrc) return Bad("attach reply: error code " + std::to_string(a.errc));
  if ((a.access & ~0xfu) != 0) return Bad("attach reply: access bits " + std::to_string(a.access));
  if (a.errc == 0 && a.length == 0) return Bad("attach reply: empty window");
  if (a.base + a.length < a.base || a.file_offset + a.length < a.file_offset) {
    return Bad("attach reply: overflow");
  }
  return a;
}

void EncodeMailboxEntry(std::byte* at, const MailboxEntry& e) { std::memcpy(at, &e, sizeof e); }

Result<MailboxEntry> DecodeMailboxEntry(std::span<const std::byte> at, size_t max_send) {
  if (at.size() < kEntryHeader) return Bad("mailbox: entry header crosses the ring end");
  const auto e = Image<MailboxEntry>(at);
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
  TcpRequest image = r;
  image.reserved0 = 0;
  image.reserved1 = 0;
  std::memcpy(out, &image, sizeof image);
}

Result<TcpRequest> DecodeTcpRequest(std::span<const std::byte> f) {
  if (f.size() < kTcpRequestHeader) return Bad("tcp request: " + std::to_string(f.size()) + " bytes");
  return DecodeTcpRequest(f.first(kTcpRequestHeader), f.size() - kTcpRequestHeader);
}

Result<TcpRequest> DecodeTcpRequest(std::span<const std::byte> f, size_t payload) {
  if (f.size() != kTcpRequestHeader)
    return Bad("tcp request: header of " + std::to_string(f.size()) + " bytes");
  const auto r = Image<TcpRequest>(f);
  if (r.reserved0 != 0 || r.reserved1 != 0) return Bad("tcp request: reserved field not zero");
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
  if ((r.flags & ~kTcpFlagImm) != 0) return Bad("tcp request: unknown flags");
  return r;
}

void EncodeTcpResponse(std::byte* out, const TcpResponse& r) { std::memcpy(out, &r, sizeof r); }

Result<TcpResponse> DecodeTcpResponse(std::span<const std::byte> f) {
  if (f.size() < kTcpResponseHeader) return Bad("tcp response: " + std::to_string(f.size()) + " bytes");
  return DecodeTcpResponse(f.first(kTcpResponseHeader), f.size() - kTcpResponseHeader);
}

Result<TcpResponse> DecodeTcpResponse(std::span<const std::byte> f, size_t payload) {
  if (f.size() != kTcpResponseHeader)
    return Bad("tcp response: header of " + std::to_string(f.size()) + " bytes");
  const auto r = Image<TcpResponse>(f);
  if (r.errc > kMaxErrc) return Bad("tcp response: error code " + std::to_string(r.errc));
  if (payload != r.length) return Bad("tcp response: payload does not match its length");
  if (r.errc != 0 && r.length != 0) return Bad("tcp response: error with data");
  return r;
}

}  // namespace rdmq::fabric::internal::wire
