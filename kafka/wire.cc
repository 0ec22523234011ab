// Kafka primitive types: the bounds-checked Reader and the chunked Writer (wire.h).
#include "rdmq/kafka/wire.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>
#include <string>

#include "rdmq/common/coding.h"

namespace rdmq::kafka {
namespace {

constexpr size_t kFirstBlock = 512;
constexpr size_t kMaxBlock = 64 << 10;
constexpr int32_t kMaxClassicString = std::numeric_limits<int16_t>::max();

std::string NeedDetail(size_t want, size_t have) {
  return "needs " + std::to_string(want) + " bytes, " + std::to_string(have) + " left";
}

}  // namespace

// ---- Reader -------------------------------------------------------------------------------------

void Reader::FailAt(size_t at, KafkaErrc code, std::string_view field, std::string_view detail) {
  if (!ok()) return;
  std::string context(field);
  context += " at byte " + std::to_string(at);
  if (!detail.empty()) {
    context += ": ";
    context += detail;
  }
  status_ = Status(code, std::move(context));
}

Status Reader::ExpectEnd(std::string_view what) {
  if (ok() && pos_ != data_.size()) {
    Fail(KafkaErrc::kTrailingBytes, what, std::to_string(data_.size() - pos_) + " bytes after the end");
  }
  return status_;
}

bool Reader::Need(size_t n, std::string_view field) {
  if (!ok()) return false;
  if (data_.size() - pos_ < n) {
    Fail(KafkaErrc::kTruncated, field, NeedDetail(n, data_.size() - pos_));
    return false;
  }
  return true;
}

int8_t Reader::Int8(std::string_view field) {
  if (!Need(1, field)) return 0;
  return static_cast<int8_t>(data_[pos_++]);
}

int16_t Reader::Int16(std::string_view field) {
  if (!Need(2, field)) return 0;
  const auto v = coding::LoadBE<int16_t>(data_.data() + pos_);
  pos_ += 2;
  return v;
}

int32_t Reader::Int32(std::string_view field) {
  if (!Need(4, field)) return 0;
  const auto v = coding::LoadBE<int32_t>(data_.data() + pos_);
  pos_ += 4;
  return v;
}

int64_t Reader::Int64(std::string_view field) {
  if (!Need(8, field)) return 0;
  const auto v = coding::LoadBE<int64_t>(data_.data() + pos_);
  pos_ += 8;
  return v;
}

uint32_t Reader::UInt32(std::string_view field) {
  if (!Need(4, field)) return 0;
  const auto v = coding::LoadBE<uint32_t>(data_.data() + pos_);
  pos_ += 4;
  return v;
}

bool Reader::Bool(std::string_view field) { return Int8(field) != 0; }

// Little-endian base-128 groups; the last allowed byte may only carry last_byte_bits bits.
uint64_t Reader::ReadUnsignedVarint(std::string_view field, int max_bytes, int last_byte_bits) {
  uint64_t v = 0;
  for (int i = 0; i < max_bytes; ++i) {
    if (!Need(1, field)) return 0;
    const auto b = static_cast<uint8_t>(data_[pos_]);
    if (i == max_bytes - 1 && (b >> last_byte_bits) != 0) {
      Fail(KafkaErrc::kBadVarint, field, "varint longer than its type");
      return 0;
    }
    ++pos_;
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) return v;
  }
  return 0;  // unreachable: the last byte has no continuation bit
}

uint32_t Reader::UnsignedVarint(std::string_view field) {
  return static_cast<uint32_t>(ReadUnsignedVarint(field, 5, 4));
}

int32_t Reader::Varint(std::string_view field) {
  return coding::UnZigZag32(static_cast<uint32_t>(ReadUnsignedVarint(field, 5, 4)));
}

int64_t Reader::Varlong(std::string_view field) {
  return coding::UnZigZag64(ReadUnsignedVarint(field, 10, 1));
}

Uuid Reader::ReadUuid(std::string_view field) {
  Uuid u{};
  if (!Need(u.size(), field)) return u;
  std::memcpy(u.data(), data_.data() + pos_, u.size());
  pos_ += u.size();
  return u;
}

ByteSpan Reader::Raw(size_t n, std::string_view field) {
  if (!Need(n, field)) return {};
  const ByteSpan s = data_.subspan(pos_, n);
  pos_ += n;
  return s;
}

namespace {
std::string_view AsString(ByteSpan b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }
}  // namespace

std::optional<ByteSpan> Reader::LengthPrefixed(std::string_view field, int64_t n, size_t at) {
  if (!ok() || n == -1) return std::nullopt;
  if (n < 0) {
    FailAt(at, KafkaErrc::kBadLength, field, "length " + std::to_string(n));
    return std::nullopt;
  }
  const size_t left = data_.size() - pos_;
  if (static_cast<uint64_t>(n) > left) {
    FailAt(at, KafkaErrc::kTruncated, field, NeedDetail(static_cast<size_t>(n), left));
    return std::nullopt;
  }
  const ByteSpan b = data_.subspan(pos_, static_cast<size_t>(n));
  pos_ += b.size();
  return b;
}

ByteSpan Reader::NonNull(std::optional<ByteSpan> b, std::string_view field, size_t at) {
  if (ok() && !b) FailAt(at, KafkaErrc::kMalformed, field, "null where the field is not nullable");
  return b.value_or(ByteSpan());
}

std::optional<std::string_view> Reader::NullableString(std::string_view field) {
  const size_t at = pos_;
  const int16_t n = Int16(field);
  const auto b = LengthPrefixed(field, n, at);
  return b ? std::optional<std::string_view>(AsString(*b)) : std::nullopt;
}

std::string_view Reader::String(std::string_view field) {
  const size_t at = pos_;
  const int16_t n = Int16(field);
  return AsString(NonNull(LengthPrefixed(field, n, at), field, at));
}

std::optional<std::string_view> Reader::CompactNullableString(std::string_view field) {
  const size_t at = pos_;
  const int64_t n = static_cast<int64_t>(UnsignedVarint(field)) - 1;
  const auto b = LengthPrefixed(field, n, at);
  return b ? std::optional<std::string_view>(AsString(*b)) : std::nullopt;
}

std::string_view Reader::CompactString(std::string_view field) {
  const size_t at = pos_;
  const int64_t n = static_cast<int64_t>(UnsignedVarint(field)) - 1;
  return AsString(NonNull(LengthPrefixed(field, n, at), field, at));
}

std::optional<ByteSpan> Reader::NullableBytes(std::string_view field) {
  const size_t at = pos_;
  const int32_t n = Int32(field);
  return LengthPrefixed(field, n, at);
}

ByteSpan Reader::Bytes(std::string_view field) {
  const size_t at = pos_;
  const int32_t n = Int32(field);
  return NonNull(LengthPrefixed(field, n, at), field, at);
}

std::optional<ByteSpan> Reader::CompactNullableBytes(std::string_view field) {
  const size_t at = pos_;
  const int64_t n = static_cast<int64_t>(UnsignedVarint(field)) - 1;
  return LengthPrefixed(field, n, at);
}

ByteSpan Reader::CompactBytes(std::string_view field) {
  const size_t at = pos_;
  const int64_t n = static_cast<int64_t>(UnsignedVarint(field)) - 1;
  return NonNull(LengthPrefixed(field, n, at), field, at);
}

namespace {
bool CountFits(int64_t n, size_t min_element_bytes, size_t left) {
  return static_cast<uint64_t>(n) <= left / min_element_bytes;
}
std::string CountDetail(int64_t n, size_t min_element_bytes, size_t left) {
  return "array of " + std::to_string(n) + " elements needs at least " +
         std::to_string(static_cast<uint64_t>(n) * min_element_bytes) + " bytes, " + std::to_string(left) +
         " left";
}
}  // namespace

int32_t Reader::ArrayLength(std::string_view field, size_t min_element_bytes) {
  assert(min_element_bytes >= 1);
  const size_t at = pos_;
  const int32_t n = Int32(field);
  if (!ok()) return 0;
  if (n == -1) return -1;
  if (n < 0) {
    FailAt(at, KafkaErrc::kBadLength, field, "array count " + std::to_string(n));
    return 0;
  }
  if (!CountFits(n, min_element_bytes, remaining())) {
    FailAt(at, KafkaErrc::kBadLength, field, CountDetail(n, min_element_bytes, data_.size() - at - 4));
    return 0;
  }
  return n;
}

int32_t Reader::CompactArrayLength(std::string_view field, size_t min_element_bytes) {
  assert(min_element_bytes >= 1);
  const size_t at = pos_;
  const uint32_t n = UnsignedVarint(field);
  if (!ok()) return 0;
  if (n == 0) return -1;
  const int64_t count = static_cast<int64_t>(n) - 1;
  const size_t left = remaining();
  if (!CountFits(count, min_element_bytes, left)) {
    FailAt(at, KafkaErrc::kBadLength, field, CountDetail(count, min_element_bytes, left));
    return 0;
  }
  return static_cast<int32_t>(count);
}

// ---- Writer -------------------------------------------------------------------------------------

std::byte* Writer::Room(size_t n) {
  if (blocks_.empty() || block_capacity_ - block_used_ < n) {
    size_t next = blocks_.empty() ? kFirstBlock : std::min(block_capacity_ * 2, kMaxBlock);
    next = std::max(next, n);
    blocks_.push_back(std::make_unique<std::byte[]>(next));
    block_capacity_ = next;
    block_used_ = 0;
  }
  std::byte* p = blocks_.back().get() + block_used_;
  if (!chunks_.empty() && chunks_.back().owned && chunks_.back().data + chunks_.back().size == p) {
    chunks_.back().size += n;
  } else {
    chunks_.push_back({p, n, true});
  }
  block_used_ += n;
  size_ += n;
  return p;
}

void Writer::Int8(int8_t v) { *Room(1) = static_cast<std::byte>(v); }
void Writer::Int16(int16_t v) { coding::StoreBE(Room(2), v); }
void Writer::Int32(int32_t v) { coding::StoreBE(Room(4), v); }
void Writer::Int64(int64_t v) { coding::StoreBE(Room(8), v); }
void Writer::UInt32(uint32_t v) { coding::StoreBE(Room(4), v); }

void Writer::UnsignedVarint(uint32_t v) {
  std::byte tmp[5];
  const auto n = static_cast<size_t>(coding::PutVarint(tmp, v) - tmp);
  std::memcpy(Room(n), tmp, n);
}

void Writer::Varint(int32_t v) { UnsignedVarint(coding::ZigZag32(v)); }

void Writer::Varlong(int64_t v) {
  std::byte tmp[10];
  const auto n = static_cast<size_t>(coding::PutVarintSigned(tmp, v) - tmp);
  std::memcpy(Room(n), tmp, n);
}

void Writer::Raw(ByteSpan b) {
  if (b.empty()) return;
  std::memcpy(Room(b.size()), b.data(), b.size());
}

void Writer::External(ByteSpan b) {
  if (b.empty()) return;
  chunks_.push_back({b.data(), b.size(), false});
  size_ += b.size();
}

namespace {
ByteSpan AsBytes(std::string_view s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }
}  // namespace

void Writer::String(std::string_view s) {
  if (s.size() > static_cast<size_t>(kMaxClassicString)) s = s.substr(0, kMaxClassicString);
  Int16(static_cast<int16_t>(s.size()));
  Raw(AsBytes(s));
}

void Writer::NullableString(std::optional<std::string_view> s) {
  if (!s) {
    Int16(-1);
  } else {
    String(*s);
  }
}

void Writer::CompactString(std::string_view s) {
  UnsignedVarint(static_cast<uint32_t>(s.size() + 1));
  Raw(AsBytes(s));
}

void Writer::CompactNullableString(std::optional<std::string_view> s) {
  if (!s) {
    UnsignedVarint(0);
  } else {
    CompactString(*s);
  }
}

void Writer::Bytes(ByteSpan b) {
  Int32(static_cast<int32_t>(b.size()));
  Raw(b);
}

void Writer::NullableBytes(std::optional<ByteSpan> b) {
  if (!b) {
    Int32(-1);
  } else {
    Bytes(*b);
  }
}

void Writer::CompactBytes(ByteSpan b) {
  UnsignedVarint(static_cast<uint32_t>(b.size() + 1));
  Raw(b);
}

void Writer::CompactNullableBytes(std::optional<ByteSpan> b) {
  if (!b) {
    UnsignedVarint(0);
  } else {
    CompactBytes(*b);
  }
}

void Writer::ReserveSizePrefix() {
  assert(size_ == 0 && "the size prefix must come first");
  prefix_ = Room(4);
  std::memset(prefix_, 0, 4);
}

Status Writer::FinishSizePrefix() {
  assert(prefix_ != nullptr && "ReserveSizePrefix() was not called");
  const size_t body = size_ - 4;
  if (body > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Status(KafkaErrc::kFrameTooLarge, "response of " + std::to_string(body) + " bytes");
  }
  coding::StoreBE(prefix_, static_cast<int32_t>(body));
  return Status::Ok();
}

std::vector<ByteSpan> Writer::chunks() const {
  std::vector<ByteSpan> out;
  out.reserve(chunks_.size());
  for (const Chunk& c : chunks_) out.emplace_back(c.data, c.size);
  return out;
}

std::vector<std::byte> Writer::Flatten() const {
  std::vector<std::byte> out;
  out.reserve(size_);
  for (const Chunk& c : chunks_) out.insert(out.end(), c.data, c.data + c.size);
  return out;
}

}  // namespace rdmq::kafka
