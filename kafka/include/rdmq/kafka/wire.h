// Kafka's primitive wire types (docs/kafka-protocol.md, "Primitive types"): a bounds-checked
// Reader over untrusted bytes and a Writer that builds a response as a list of chunks.
//
// Reader: big-endian fixed integers, zigzag varint/varlong, unsigned varint, classic strings and
// bytes (int16/int32 length, -1 = null), compact ones (unsigned varint length + 1, 0 = null),
// array counts (classic int32, compact uvarint - 1), tagged-field sections and uuids. Strings and
// byte fields are returned as views INTO the input (zero-copy): they live as long as the input
// does. Every read checks the bounds; the first failure puts the reader into a sticky failed
// state (status() holds it, with the field name and byte offset as context) and every later read
// returns a zero value without moving. An array count is checked against the bytes left (each
// element needs at least `min_element_bytes`), so no count can make a decoder allocate more than a
// small multiple of the input's size (the message decoders: at most about ten times).
//
// Writer: appends to storage it owns, in blocks that never move, and can append a caller's span
// by reference (External) without copying it, for Fetch responses whose record batches come
// straight from the mapped log. chunks() lists the bytes in order, ready for a gather write; the
// owned chunks stay valid until the Writer dies (a moved-to Writer keeps them), the external ones
// as long as the caller keeps them. ReserveSizePrefix() / FinishSizePrefix() put the 4-byte frame
// size in front of a message once its body is written.
//
// Neither class is thread-safe; both are cheap to create, one per message.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/kafka/errors.h"

namespace rdmq::kafka {

using Uuid = std::array<std::byte, 16>;
using ByteSpan = std::span<const std::byte>;

class Reader {
 public:
  explicit Reader(ByteSpan data) noexcept : data_(data) {}

  bool ok() const noexcept { return status_.ok(); }
  // OK, or the first failure (a KafkaErrc with "<field> at byte <offset>: <detail>" context).
  const Status& status() const noexcept { return status_; }
  // Bytes consumed so far (the offset that error contexts name).
  size_t offset() const noexcept { return pos_; }
  // Bytes left; 0 once the reader has failed.
  size_t remaining() const noexcept { return ok() ? data_.size() - pos_ : 0; }
  // The bytes not yet read (empty once failed).
  ByteSpan rest() const noexcept { return ok() ? data_.subspan(pos_) : ByteSpan(); }

  int8_t Int8(std::string_view field);
  int16_t Int16(std::string_view field);
  int32_t Int32(std::string_view field);
  int64_t Int64(std::string_view field);
  uint32_t UInt32(std::string_view field);
  // Kafka's boolean: one byte, any non-zero value is true.
  bool Bool(std::string_view field);
  // Zigzag-encoded varint (at most 5 bytes) and varlong (at most 10 bytes).
  int32_t Varint(std::string_view field);
  int64_t Varlong(std::string_view field);
  // Unsigned varint, at most 5 bytes, value within 32 bits.
  uint32_t UnsignedVarint(std::string_view field);
  Uuid ReadUuid(std::string_view field);

  // Classic string: int16 length then the bytes; null (-1) is an error here.
  std::string_view String(std::string_view field);
  std::optional<std::string_view> NullableString(std::string_view field);
  // Compact string: unsigned varint length + 1 then the bytes; 0 (null) is an error here.
  std::string_view CompactString(std::string_view field);
  std::optional<std::string_view> CompactNullableString(std::string_view field);
  // Classic bytes: int32 length then the bytes; null (-1) is an error here.
  ByteSpan Bytes(std::string_view field);
  std::optional<ByteSpan> NullableBytes(std::string_view field);
  ByteSpan CompactBytes(std::string_view field);
  std::optional<ByteSpan> CompactNullableBytes(std::string_view field);
  // Exactly n raw bytes.
  ByteSpan Raw(size_t n, std::string_view field);

  // Classic array count (int32): -1 for a null array (the caller decides whether null is allowed),
  // otherwise 0..N where N * min_element_bytes fits in the bytes left. min_element_bytes >= 1.
  int32_t ArrayLength(std::string_view field, size_t min_element_bytes);
  // Compact array count (unsigned varint N: 0 = null (-1 returned), else N - 1 elements).
  int32_t CompactArrayLength(std::string_view field, size_t min_element_bytes);

  // A tagged-field section: unsigned varint count, then per field an unsigned varint tag (strictly
  // increasing), an unsigned varint size and that many bytes. on_field(tag, bytes) sees each;
  // the section is consumed whatever it does, so unknown tags are skipped.
  template <class F>
  void TaggedFields(std::string_view field, F&& on_field);
  void SkipTaggedFields(std::string_view field) {
    TaggedFields(field, [](uint32_t, ByteSpan) {});
  }

  // Marks the reader failed (first failure wins), naming the field and the current offset (or
  // `at`, the field's start, in FailAt). detail may be empty.
  void Fail(KafkaErrc code, std::string_view field, std::string_view detail) {
    FailAt(pos_, code, field, detail);
  }
  void FailAt(size_t at, KafkaErrc code, std::string_view field, std::string_view detail);
  // OK when every byte was read; kTrailingBytes naming `what` when some are left; the sticky
  // failure when the reader had failed.
  Status ExpectEnd(std::string_view what);

 private:
  bool Need(size_t n, std::string_view field);
  // The n bytes of a length-prefixed field that starts at `at`: nullopt for null (-1) or after a
  // failure; kBadLength for other negative lengths, kTruncated when fewer than n bytes are left.
  std::optional<ByteSpan> LengthPrefixed(std::string_view field, int64_t n, size_t at);
  // b, or kMalformed (null where the field is not nullable) when it is null.
  ByteSpan NonNull(std::optional<ByteSpan> b, std::string_view field, size_t at);
  uint64_t ReadUnsignedVarint(std::string_view field, int max_bytes, int last_byte_bits);

  ByteSpan data_;
  size_t pos_ = 0;
  Status status_;
};

template <class F>
void Reader::TaggedFields(std::string_view field, F&& on_field) {
  // Each tagged field takes at least 2 bytes (a tag and a size).
  const uint32_t count = UnsignedVarint(field);
  if (!ok()) return;
  if (count > remaining() / 2) {
    Fail(KafkaErrc::kBadLength, field,
         "tagged field count " + std::to_string(count) + " exceeds the bytes left");
    return;
  }
  uint32_t previous = 0;
  for (uint32_t i = 0; i < count && ok(); ++i) {
    const uint32_t tag = UnsignedVarint(field);
    if (ok() && i > 0 && tag <= previous) {
      Fail(KafkaErrc::kMalformed, field,
           "tagged fields out of order or repeated (tag " + std::to_string(tag) + ")");
      return;
    }
    previous = tag;
    const uint32_t size = UnsignedVarint(field);
    const ByteSpan bytes = Raw(size, field);
    if (ok()) on_field(tag, bytes);
  }
}

class Writer {
 public:
  Writer() = default;
  Writer(Writer&&) noexcept = default;
  Writer& operator=(Writer&&) noexcept = default;
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void Int8(int8_t v);
  void Int16(int16_t v);
  void Int32(int32_t v);
  void Int64(int64_t v);
  void UInt32(uint32_t v);
  void Bool(bool v) { Int8(v ? 1 : 0); }
  void Varint(int32_t v);
  void Varlong(int64_t v);
  void UnsignedVarint(uint32_t v);
  void WriteUuid(const Uuid& v) { Raw(v); }

  // Strings longer than the type allows (32767 bytes classic) are cut at that length.
  void String(std::string_view s);
  void NullableString(std::optional<std::string_view> s);
  void CompactString(std::string_view s);
  void CompactNullableString(std::optional<std::string_view> s);
  // Byte fields: a length and a copy of the bytes.
  void Bytes(ByteSpan b);
  void NullableBytes(std::optional<ByteSpan> b);
  void CompactBytes(ByteSpan b);
  void CompactNullableBytes(std::optional<ByteSpan> b);
  // Array counts: classic int32 (-1 = null) and compact (n + 1, 0 = null for n = -1).
  void ArrayLength(int32_t n) { Int32(n); }
  void CompactArrayLength(int32_t n) { UnsignedVarint(static_cast<uint32_t>(n + 1)); }
  // An empty tagged-field section (count 0).
  void EmptyTaggedFields() { UnsignedVarint(0); }

  // Copies the bytes.
  void Raw(ByteSpan b);
  // Appends the caller's bytes by reference: they must stay valid and unchanged until the chunks
  // have been written out. An empty span adds nothing.
  void External(ByteSpan b);

  // Reserves 4 bytes for the frame size; must be the first thing written.
  void ReserveSizePrefix();
  // Writes size() - 4 into the reserved prefix (big-endian int32). kFrameTooLarge when the body
  // is above INT32_MAX bytes.
  Status FinishSizePrefix();

  // Every byte written so far, owned and external.
  size_t size() const noexcept { return size_; }
  // The bytes in order: owned chunks point into this Writer's blocks, external ones at the
  // caller's spans. Adjacent owned bytes of one block form one chunk.
  std::vector<ByteSpan> chunks() const;
  // A copy of everything as one buffer (tests, small messages).
  std::vector<std::byte> Flatten() const;

 private:
  struct Chunk {
    const std::byte* data;
    size_t size;
    bool owned;
  };
  // n contiguous owned bytes at the end of the message.
  std::byte* Room(size_t n);

  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  size_t block_used_ = 0;
  size_t block_capacity_ = 0;
  std::vector<Chunk> chunks_;
  size_t size_ = 0;
  std::byte* prefix_ = nullptr;
};

}  // namespace rdmq::kafka
