// Byte formats of the fabric's own control and data messages (docs/fabric.md), as pure encode/
// decode functions so that they can be tested and fuzzed without sockets. Every decoder
// validates lengths and values and returns kProtocol on malformed input.
//
// Each fixed-size part is a struct laid out exactly as the bytes on the wire (little-endian, as
// the host: rdmq/common/coding.h checks it), pinned here by static_asserts on its size and every
// field's offset; the codecs copy it whole and validate it. Reserved fields are written as zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "rdmq/common/status.h"

namespace rdmq::fabric::internal::wire {

// A struct the codecs may copy to and from the wire as it is: no padding, no pointers.
template <class T>
inline constexpr bool kWireImage =
    std::is_trivially_copyable_v<T>&& std::has_unique_object_representations_v<T>;

// ---- frames on the bootstrap connection (conn.h): this header, then `length` payload bytes
struct FrameHeaderImage {
  uint32_t length;  // payload bytes
  uint8_t type;     // FrameType
  uint8_t nfds;     // descriptors riding on the frame's first byte
  uint16_t flags;
};
inline constexpr size_t kFrameHeaderSize = 8;
static_assert(kWireImage<FrameHeaderImage> && sizeof(FrameHeaderImage) == kFrameHeaderSize);
static_assert(offsetof(FrameHeaderImage, length) == 0 && offsetof(FrameHeaderImage, type) == 4 &&
              offsetof(FrameHeaderImage, nfds) == 5 && offsetof(FrameHeaderImage, flags) == 6);

enum FrameType : uint8_t {
  kFrameHello = 1,      // connector -> acceptor, first frame
  kFrameHelloAck = 2,   // acceptor -> connector, answer to kFrameHello
  kFrameControl = 3,    // SendControl payload
  kFrameAttachReq = 4,  // shm: fd for a key, please
  kFrameAttachRep = 5,  // shm: the answer, with the fd
  kFrameTcpReq = 6,     // tcp: a one-sided operation or SEND
  kFrameTcpResp = 7,    // tcp: its acknowledgement (and READ data)
};

// ---- region descriptor (RegionDescriptor::Encode): this, n node bytes, a CRC-32C of both
struct DescriptorImage {
  char magic[4];  // "RDMR"
  uint8_t version;
  uint8_t provider;
  uint16_t node_length;
  uint32_t access;
  uint32_t reserved;
  uint64_t key;
  uint64_t base;
  uint64_t length;
};
static_assert(kWireImage<DescriptorImage> && sizeof(DescriptorImage) == 40);
static_assert(offsetof(DescriptorImage, magic) == 0 && offsetof(DescriptorImage, version) == 4 &&
              offsetof(DescriptorImage, provider) == 5 && offsetof(DescriptorImage, node_length) == 6 &&
              offsetof(DescriptorImage, access) == 8 && offsetof(DescriptorImage, reserved) == 12 &&
              offsetof(DescriptorImage, key) == 16 && offsetof(DescriptorImage, base) == 24 &&
              offsetof(DescriptorImage, length) == 32);

// ---- bootstrap handshake (every provider), frame types kHello / kHelloAck: HelloFixed, a u16
// node address length, then that many bytes of node address
inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr size_t kMaxHelloNode = 1024;
struct HelloFixed {
  uint32_t version = kProtocolVersion;
  uint32_t flags = 0;  // shm: bit 0 = has a receive mailbox
  uint64_t endpoint_id = 0;
  uint32_t mailbox_capacity = 0;  // shm: data bytes of the receive mailbox
  uint32_t aux = 0;               // verbs: rdma_cm port of the acceptor
};
struct Hello : HelloFixed {
  std::string node;  // the sender's bootstrap address ("" if it does not listen)
};
inline constexpr size_t kHelloNodeLengthAt = sizeof(HelloFixed);
inline constexpr size_t kHelloHeader = kHelloNodeLengthAt + sizeof(uint16_t);
static_assert(kWireImage<HelloFixed> && sizeof(HelloFixed) == 24 && kHelloHeader == 26);
static_assert(offsetof(HelloFixed, version) == 0 && offsetof(HelloFixed, flags) == 4 &&
              offsetof(HelloFixed, endpoint_id) == 8 && offsetof(HelloFixed, mailbox_capacity) == 16 &&
              offsetof(HelloFixed, aux) == 20);
std::string EncodeHello(const Hello& h);
Result<Hello> DecodeHello(std::span<const std::byte> b);

// ---- shm attach, frame types kAttachReq / kAttachRep
struct AttachRequest {
  uint64_t req_id = 0;
  uint64_t key = 0;
};
static_assert(kWireImage<AttachRequest> && sizeof(AttachRequest) == 16);
static_assert(offsetof(AttachRequest, req_id) == 0 && offsetof(AttachRequest, key) == 8);
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
  uint32_t reserved = 0;
};
static_assert(kWireImage<AttachReply> && sizeof(AttachReply) == 48);
static_assert(offsetof(AttachReply, req_id) == 0 && offsetof(AttachReply, errc) == 8 &&
              offsetof(AttachReply, access) == 12 && offsetof(AttachReply, base) == 16 &&
              offsetof(AttachReply, length) == 24 && offsetof(AttachReply, file_offset) == 32 &&
              offsetof(AttachReply, slot) == 40 && offsetof(AttachReply, reserved) == 44);
std::string EncodeAttachReply(const AttachReply& r);
Result<AttachReply> DecodeAttachReply(std::span<const std::byte> b);

// ---- shm mailbox entry header (entries 16-byte aligned, never wrapping)
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
static_assert(kWireImage<MailboxEntry> && sizeof(MailboxEntry) == kEntryHeader);
static_assert(offsetof(MailboxEntry, length) == 0 && offsetof(MailboxEntry, kind) == 4 &&
              offsetof(MailboxEntry, flags) == 6 && offsetof(MailboxEntry, imm) == 8 &&
              offsetof(MailboxEntry, total) == 12);
void EncodeMailboxEntry(std::byte* at, const MailboxEntry& e);
// `at_to_ring_end`: the bytes from the entry to the end of the ring data area.
Result<MailboxEntry> DecodeMailboxEntry(std::span<const std::byte> at_to_ring_end, size_t max_send);
inline size_t MailboxEntryTotal(uint16_t kind, size_t payload) {
  return kEntryHeader + (kind == kEntrySend ? (payload + 15) / 16 * 16 : 0);
}

// ---- tcp data frames (frame types kTcpReq / kTcpResp), see docs/fabric.md
inline constexpr uint8_t kTcpFlagImm = 1;  // SEND carries an immediate (accepted, not produced)
struct TcpRequest {
  uint8_t opcode = 0;  // fabric::Opcode value: WRITE, WRITE_IMM, READ, FETCH_ADD, COMPARE_SWAP, SEND
  uint8_t flags = 0;   // kTcpFlagImm or 0
  uint16_t reserved0 = 0;
  uint32_t length = 0;  // READ: bytes wanted; WRITE/WRITE_IMM/SEND: payload bytes that follow
  uint64_t seq = 0;
  uint64_t key = 0;
  uint64_t offset = 0;   // relative to the base of the window the key grants
  uint64_t operand = 0;  // FETCH_ADD: addend; COMPARE_SWAP: expected value
  uint64_t swap = 0;     // COMPARE_SWAP: new value
  uint32_t imm = 0;
  uint32_t reserved1 = 0;
};
inline constexpr size_t kTcpRequestHeader = 56;
static_assert(kWireImage<TcpRequest> && sizeof(TcpRequest) == kTcpRequestHeader);
static_assert(offsetof(TcpRequest, opcode) == 0 && offsetof(TcpRequest, flags) == 1 &&
              offsetof(TcpRequest, reserved0) == 2 && offsetof(TcpRequest, length) == 4 &&
              offsetof(TcpRequest, seq) == 8 && offsetof(TcpRequest, key) == 16 &&
              offsetof(TcpRequest, offset) == 24 && offsetof(TcpRequest, operand) == 32 &&
              offsetof(TcpRequest, swap) == 40 && offsetof(TcpRequest, imm) == 48 &&
              offsetof(TcpRequest, reserved1) == 52);
void EncodeTcpRequest(std::byte* out, const TcpRequest& r);  // kTcpRequestHeader bytes
// Decodes the header and checks that the payload that follows matches `length`.
Result<TcpRequest> DecodeTcpRequest(std::span<const std::byte> frame);
// The same for a header alone (kTcpRequestHeader bytes) whose payload of `payload` bytes is
// received elsewhere (in place, conn.h).
Result<TcpRequest> DecodeTcpRequest(std::span<const std::byte> header, size_t payload);

struct TcpResponse {
  uint64_t seq = 0;
  uint32_t errc = 0;    // FabricErrc, 0 = success
  uint32_t length = 0;  // READ: bytes of data that follow
  uint64_t value = 0;   // atomics: the old value
};
inline constexpr size_t kTcpResponseHeader = 24;
static_assert(kWireImage<TcpResponse> && sizeof(TcpResponse) == kTcpResponseHeader);
static_assert(offsetof(TcpResponse, seq) == 0 && offsetof(TcpResponse, errc) == 8 &&
              offsetof(TcpResponse, length) == 12 && offsetof(TcpResponse, value) == 16);
void EncodeTcpResponse(std::byte* out, const TcpResponse& r);
Result<TcpResponse> DecodeTcpResponse(std::span<const std::byte> frame);
Result<TcpResponse> DecodeTcpResponse(std::span<const std::byte> header, size_t payload);

}  // namespace rdmq::fabric::internal::wire
