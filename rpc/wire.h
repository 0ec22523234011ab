// The RPC wire format: messages in a ring, as FLOCK's section 3.3.1 lays them out, plus the
// 32-bit immediate of WRITE_WITH_IMM. docs/rpc.md specifies every byte; this header is the code.
//
// A message (all integers little-endian), aligned to and a multiple of kMessageAlign bytes:
//
//   +0   u64 canary        random, never 0; repeated as the message's last 8 bytes
//   +8   u16 magic         0x7172 ("rq")
//   +10  u8  version       1
//   +11  u8  flags         kFlag* below
//   +12  u32 length        whole message in bytes, header to trailing canary (multiple of 64)
//   +16  u64 position      absolute ring position the message starts at (producer's tail)
//   +24  u32 count         number of entries
//   +28  u32 credit_seq    responses: the credit-renewal sequence this message answers (kFlagCredit)
//   +32  u64 peer_head     requests: the client's response-ring head; responses: the server's
//                          request-ring head (FLOCK's piggybacked Head)
//   +40  u64 credit_limit  responses: cumulative number of requests the channel may send
//   +48  entries: meta (16 bytes) + data, data padded with zeros to 8 bytes
//          +0 u32 size  +4 u16 handler  +6 u16 status  +8 u32 thread  +12 u32 sequence
//   ...  zero padding
//   +length-8  u64 canary  (the same value as at +0)
//
// A receiver dispatches a message only when the canary at its start and the one at its end
// match; senders write the trailing canary with a separate, later WRITE on the same endpoint, so
// a matching trailing canary proves every earlier byte landed, whatever order a provider copies
// bytes in. Receivers zero the first word of every 64-byte slot they consume, so a non-zero word
// at the head means "a message is being written here".
//
// Thread safety: pure functions and small value types; MessageBuilder and the views are
// thread-compatible. Nothing here allocates.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "rdmq/common/coding.h"
#include "rdmq/common/status.h"

namespace rdmq::rpc {

inline constexpr uint32_t kMessageAlign = 64;
inline constexpr uint32_t kHeaderSize = 48;
inline constexpr uint32_t kMetaSize = 16;
inline constexpr uint32_t kCanarySize = 8;
inline constexpr uint32_t kDataAlign = 8;
inline constexpr uint16_t kMagic = 0x7172;
inline constexpr uint8_t kVersion = 1;
// The smallest message: a header and a trailing canary, rounded up.
inline constexpr uint32_t kMinMessage = kMessageAlign;
static_assert(kHeaderSize + kCanarySize <= kMinMessage);
static_assert(kHeaderSize % kDataAlign == 0 && kMetaSize % kDataAlign == 0);

enum MessageFlags : uint8_t {
  kFlagResponse = 1u << 0,  // written by the server into a response ring
  kFlagPad = 1u << 1,       // filler up to the ring's end; count is 0; the reader skips it
  kFlagCredit = 1u << 2,    // responses: answers the credit renewal numbered credit_seq
  kFlagActive = 1u << 3,    // responses: the channel is active (may send); clear: deactivated
};
inline constexpr uint8_t kKnownFlags = kFlagResponse | kFlagPad | kFlagCredit | kFlagActive;

// Status codes carried in a response entry's meta. 1..255 are rdmq::Errc values of a handler's
// error (the entry's data is then the error's text).
enum class WireStatus : uint16_t {
  kOk = 0,
  kUnknownHandler = 256,
  kResponseTooLarge = 257,
};

struct EntryMeta {
  uint32_t size = 0;     // data bytes after the meta
  uint16_t handler = 0;  // RPC handler id
  uint16_t status = 0;   // responses: WireStatus or an Errc value; requests: 0
  uint32_t thread = 0;   // client thread id
  uint32_t seq = 0;      // the thread's sequence id for this request
};

struct MessageHeader {
  uint64_t canary = 0;
  uint8_t flags = 0;
  uint32_t length = 0;
  uint64_t position = 0;
  uint32_t count = 0;
  uint32_t credit_seq = 0;
  uint64_t peer_head = 0;
  uint64_t credit_limit = 0;
};

constexpr uint64_t AlignUp(uint64_t v, uint64_t a) noexcept { return (v + a - 1) / a * a; }

// Bytes one entry takes in a message.
constexpr uint64_t EntryBytes(uint64_t data_size) noexcept {
  return kMetaSize + AlignUp(data_size, kDataAlign);
}
// Length of a message whose entries take `entry_bytes` in all.
constexpr uint64_t MessageLength(uint64_t entry_bytes) noexcept {
  return AlignUp(kHeaderSize + entry_bytes + kCanarySize, kMessageAlign);
}
// The largest data a single entry can carry in a message of at most `max_message` bytes.
constexpr uint64_t MaxEntryData(uint64_t max_message) noexcept {
  const uint64_t room = max_message - kHeaderSize - kCanarySize - kMetaSize;
  return room / kDataAlign * kDataAlign;
}

// Builds one message in place (the caller's buffer is usually the sender's staging copy of the
// ring at the position the message will occupy). Add entries, then Finish.
class MessageBuilder {
 public:
  // `out` must have room for `max_length` bytes (a multiple of kMessageAlign).
  MessageBuilder(std::byte* out, uint32_t max_length) noexcept : out_(out), max_length_(max_length) {}

  uint32_t count() const noexcept { return count_; }
  // Bytes written so far (header and entries): what the body WRITE must cover.
  uint32_t used() const noexcept { return used_; }
  // Length the message would have if finished now.
  uint32_t length() const noexcept { return static_cast<uint32_t>(MessageLength(used_ - kHeaderSize)); }
  // True if an entry with `data_size` bytes still fits within max_length.
  bool Fits(uint64_t data_size) const noexcept {
    return MessageLength(used_ - kHeaderSize + EntryBytes(data_size)) <= max_length_;
  }
  // Appends an entry (meta.size bytes of data) and returns where its data goes; the alignment
  // padding after it is zeroed. Requires Fits(meta.size).
  std::byte* Add(const EntryMeta& meta) noexcept;
  void Add(const EntryMeta& meta, std::span<const std::byte> data) noexcept {
    std::byte* p = Add(meta);
    if (!data.empty()) std::memcpy(p, data.data(), data.size());
  }
  // Writes the header (count and length filled in) and the trailing canary; returns the length.
  // h.canary must be non-zero. The bytes between used() and length()-8 are zeroed.
  uint32_t Finish(MessageHeader h) noexcept;

 private:
  std::byte* out_;
  uint32_t max_length_;
  uint32_t used_ = kHeaderSize;
  uint32_t count_ = 0;
};

// Writes a pad message of `length` bytes at `out`: only the header and the trailing canary are
// written (the body is skipped by readers), so a sender need only WRITE those two pieces.
void BuildPad(std::byte* out, uint32_t length, uint64_t position, uint64_t canary,
              uint8_t extra_flags) noexcept;

// One entry of a parsed message.
struct Entry {
  EntryMeta meta;
  std::span<const std::byte> data;
};

// A message that passed ParseMessage. Points into the ring; valid until the reader releases it.
class MessageView {
 public:
  MessageView() = default;
  const MessageHeader& header() const noexcept { return header_; }
  // Iterates the entries in order: for (Entry e; cursor.Next(&e);) ...
  class Cursor {
   public:
    explicit Cursor(const MessageView& v) noexcept : p_(v.entries_), left_(v.header_.count) {}
    bool Next(Entry* e) noexcept;

   private:
    const std::byte* p_;
    uint32_t left_;
  };
  Cursor entries() const noexcept { return Cursor(*this); }

 private:
  friend Result<MessageView> ParseMessage(std::span<const std::byte>, uint64_t, bool);
  MessageHeader header_;
  const std::byte* entries_ = nullptr;
};

// Fully validates a complete message (exactly `bytes`, as long as its header says) that should
// start at ring position `expected_position` and travel in the direction `response`: canaries,
// magic, version, flags, length, position, and that every entry lies inside the message.
// Returns RpcErrc::kCorruptMessage with a context naming what is wrong otherwise.
Result<MessageView> ParseMessage(std::span<const std::byte> bytes, uint64_t expected_position, bool response);

// Decodes only the header fields (no validation). `p` must have kHeaderSize readable bytes.
MessageHeader DecodeHeader(const std::byte* p) noexcept;

// --- WRITE_WITH_IMM immediates ---------------------------------------------------------------
// bits 31..30 kind, bits 29..16 sequence (14 bits), bits 15..0 value.
//   kDoorbell       client -> server or server -> client on tcp/verbs: "a message was written to
//                   one of your rings" (seq and value 0).
//   kCreditRenewal  client -> server: renewal number `seq` (mod 2^14) with the median coalescing
//                   degree since the previous renewal in 1/16ths (value, saturating at 65535).
enum class ImmKind : uint8_t { kDoorbell = 0, kCreditRenewal = 1 };
inline constexpr uint32_t kImmSeqMask = 0x3fff;

struct Imm {
  ImmKind kind = ImmKind::kDoorbell;
  uint16_t seq = 0;
  uint16_t value = 0;
};

constexpr uint32_t EncodeImm(Imm imm) noexcept {
  return (static_cast<uint32_t>(imm.kind) & 3u) << 30 | (imm.seq & kImmSeqMask) << 16 | imm.value;
}
// False for a kind this version does not know.
constexpr bool DecodeImm(uint32_t raw, Imm* out) noexcept {
  const uint32_t kind = raw >> 30;
  if (kind > static_cast<uint32_t>(ImmKind::kCreditRenewal)) return false;
  out->kind = static_cast<ImmKind>(kind);
  out->seq = static_cast<uint16_t>((raw >> 16) & kImmSeqMask);
  out->value = static_cast<uint16_t>(raw & 0xffff);
  return true;
}

// Coalescing degree in 1/16ths, as the imm carries it.
constexpr uint16_t DegreeToWire(double degree) noexcept {
  const double v = degree * 16.0 + 0.5;
  return v >= 65535.0 ? uint16_t{65535} : v <= 0 ? uint16_t{0} : static_cast<uint16_t>(v);
}

// Acquire/relaxed loads of 8- and 4-byte words in ring memory another process writes.
inline uint64_t LoadAcquire64(const std::byte* p) noexcept {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(const_cast<std::byte*>(p)))
      .load(std::memory_order_acquire);
}
inline void StoreRelease64(std::byte* p, uint64_t v) noexcept {
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(p)).store(v, std::memory_order_release);
}

}  // namespace rdmq::rpc
