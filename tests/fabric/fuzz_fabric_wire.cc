// libFuzzer target: the fabric's internal decoders (fabric/wire.h): handshake, shm attach
// request/reply, shm mailbox entries and tcp request/response frames. The first byte picks the
// decoder; decoded values must re-encode to the same bytes where the format is canonical, and
// the tcp header decoders (for payloads received in place) must agree with the frame decoders.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rdmq/fabric/fabric.h"
#include "wire.h"

namespace wire = rdmq::fabric::internal::wire;

namespace {
// A tcp header decoded alone (its payload received in place) must be decoded as in its frame:
// `decode(frame)` and `decode(header, payload length)` agree, on success and on failure.
template <class Decode>
void HeaderAgrees(std::span<const std::byte> frame, size_t header, Decode decode) {
  if (frame.size() < header) return;
  const auto whole = decode(frame);
  const auto head = decode(frame.first(header), frame.size() - header);
  if (whole.ok() != head.ok()) std::abort();
  if (whole.ok() && std::memcmp(&*whole, &*head, sizeof *head) != 0) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0:
      if (auto h = wire::DecodeHello(in); h.ok()) {
        const std::string again = wire::EncodeHello(*h);
        if (again.size() != in.size() || std::memcmp(again.data(), in.data(), in.size()) != 0) std::abort();
      }
      break;
    case 1:
      if (auto r = wire::DecodeAttachRequest(in); r.ok()) {
        if (wire::EncodeAttachRequest(*r).size() != in.size()) std::abort();
      }
      break;
    case 2:
      if (auto r = wire::DecodeAttachReply(in); r.ok()) {
        const std::string again = wire::EncodeAttachReply(*r);
        if (again.size() != in.size() || std::memcmp(again.data(), in.data(), in.size()) != 0) std::abort();
      }
      break;
    case 3:
      if (auto e = wire::DecodeMailboxEntry(in, rdmq::fabric::kMaxSendSize); e.ok()) {
        if (e->total > in.size() || e->total < wire::kEntryHeader) std::abort();
      }
      break;
    case 4:
      HeaderAgrees(in, wire::kTcpRequestHeader, [](auto... x) { return wire::DecodeTcpRequest(x...); });
      if (auto r = wire::DecodeTcpRequest(in); r.ok()) {
        if (in.size() != wire::kTcpRequestHeader +
                             ((r->opcode == 1 || r->opcode == 2 || r->opcode == 6) ? r->length : 0)) {
          std::abort();
        }
        std::vector<std::byte> again(wire::kTcpRequestHeader);
        wire::EncodeTcpRequest(again.data(), *r);
        if (std::memcmp(again.data(), in.data(), wire::kTcpRequestHeader) != 0) std::abort();
      }
      break;
    default:
      HeaderAgrees(in, wire::kTcpResponseHeader, [](auto... x) { return wire::DecodeTcpResponse(x...); });
      if (auto r = wire::DecodeTcpResponse(in); r.ok()) {
        if (in.size() != wire::kTcpResponseHeader + r->length) std::abort();
      }
      break;
  }
  return 0;
}
