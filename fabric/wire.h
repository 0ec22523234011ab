// Byte formats of the fabric's own control and data messages (docs/fabric.md), as pure encode/
// decode functions so that they can be tested and fuzzed without sockets. Every decoder
// validates lengths and values and returns kProtocol on malformed input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "rdmq/common/status.h"

namespace rdmq::fabric::internal::wire {

// Frame types on the bootstrap connection (conn.h frames).
enum FrameType : uint8_t {
  kFrameHello = 1,      // connector -> acceptor, first frame
  kFrameHelloAck = 2,   // acceptor -> connector, answer to kFrameHello
  kFrameControl = 3,    // SendControl payload
  kFrameAttachReq = 4,  // shm: fd for a key, please
  kFrameAttachRep = 5,  // shm: the answer, with the fd
  kFrameTcpReq = 6,     // tcp: a one-sided operation or SEND
  kFrameTcpResp = 7,    // tcp: its acknowledgement (and READ data)
};

// ---- bootstrap handshake (every provider), frame type kHello / kHelloAck
inline constexpr uint32_t kProtocolVersion = 1;
struct Hello {
  uint32_t version = kProtocolVersion;
  uint32_t flags = 0;  // shm: bit 0 = has a receive mailbox
  uint64_t endpoint_id = 0;
  uint32_t mailbox_capacity = 0;  // shm: data bytes of the receive mailbox
  uint32_t aux = 0;               // verbs: rdma_cm port of the acceptor
  std::string node;               // the sender's bootstrap address ("" if it does not listen)
};
std::string EncodeHello(const Hello& h);
Result<Hello> DecodeHello(std::span<const std::byte> b);

// ---- shm attach, frame types kAttachReq / kAttachRep
struct AttachRequest {
  uint64_t req_id = 0;
  uint64_t key = 0;
};
std::string EncodeAttachRequest(const AttachRequest& r);
Result<AttachRequest> DecodeAttachRequest(std::span<const std::byte> b);

struct AttachReply {
  uint64_t req_id = 0;
  uint32_t errc = 0;  // FabricErrc, 0 = granted (then one fd rides with the frame)
  uint32_t access = 0;
  uint64_t base = 0;         // owner's address of the window's first byte
  uint64_t length = 0;       // window length
  uint64_t file_offset = 0;  // file offset of the window's first byte in the fd
  uint32_t slot = 0;         // index of the key's word in the owner's key page
};
std::string EncodeAttachReply(const AttachReply& r);
Result<AttachReply> DecodeAttachReply(std::span<const std::byte> b);

// ---- shm mailbox entry header (16 bytes, entries 16-byte aligned, never wrapping)
inline constexpr uint16_t kEntrySend = 1;
inline constexpr uint16_t kEntryWriteImm = 2;
inline constexpr uint16_t kEntryPad = 3;
inline constexpr uint16_t kEntryFlagImm = 1;
inline constexpr size_t kEntryHeader = 16;
struct MailboxEntry {
  uint32_t length = 0;  // payload bytes (SEND) or bytes written (WRITE_IMM)
  uint16_t kind = 0;
  uint16_t flags = 0;
  uint32_t imm = 0;
  uint32_t total = 0;  // entry bytes including header and padding
};
void EncodeMailboxEntry(std::byte* at, const MailboxEntry& e);
// `room`: bytes from the entry to the end of the ring data area.
Result<MailboxEntry> DecodeMailboxEntry(std::span<const std::byte> at_to_ring_end, size_t max_send);
inline size_t MailboxEntryTotal(uint16_t kind, size_t payload) {
  return kEntryHeader + (kind == kEntrySend ? (payload + 15) / 16 * 16 : 0);
}

// ---- tcp data frames (frame types kTcpReq / kTcpResp), see docs/fabric.md
struct TcpRequest {
  uint8_t opcode = 0;  // fabric::Opcode value: WRITE, WRITE_IMM, READ, FETCH_ADD, COMPARE_SWAP, SEND
  uint8_t flags = 0;   // bit 0: SEND carries an immediate
  uint64_t seq = 0;
  uint64_t key = 0;
  uint64_t offset = 0;  // relative to the base of the window the key grants
  uint32_t length = 0;  // READ: bytes wanted; WRITE/WRITE_IMM/SEND: payload bytes that follow
  uint32_t imm = 0;
  uint64_t operand = 0;
  uint64_t swap = 0;
};
inline constexpr size_t kTcpRequestHeader = 56;
void EncodeTcpRequest(std::byte* out, const TcpRequest& r);  // kTcpRequestHeader bytes
// Decodes the header and checks that the payload that follows matches `length`.
Result<TcpRequest> DecodeTcpRequest(std::span<const std::byte> frame);

struct TcpResponse {
  uint64_t seq = 0;
  uint32_t errc = 0;    // FabricErrc, 0 = success
  uint32_t length = 0;  // READ: bytes of data that follow
  uint64_t value = 0;   // atomics: the old value
};
inline constexpr size_t kTcpResponseHeader = 24;
void EncodeTcpResponse(std::byte* out, const TcpResponse& r);
Result<TcpResponse> DecodeTcpResponse(std::span<const std::byte> frame);

}  // namespace rdmq::fabric::internal::wire
