// Field-visitor codec for rdmq's RPC messages (docs/protocol.md section 2).
//
// A message is a struct that lists its fields once:
//
//   struct GetSegmentRequest {
//     std::string topic; int32_t partition = 0; int64_t base_offset = 0;
//     template <class V> void Visit(V& v) { v(topic); v(partition); v(base_offset); }
//   };
//
// and Encode()/Decode() walk that list: integers (and the strong types of common/types.h, as the
// integer they hold) little-endian, strings and byte strings with a
// u32 length, vectors with a u32 count, nested messages inline. Decode is bounds-checked
// against what remains and against per-type limits, and rejects trailing bytes, so arbitrary
// input yields kMalformed, never a crash or an oversized allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "rdmq/common/coding.h"
#include "rdmq/common/errors.h"
#include "rdmq/common/status.h"
#include "rdmq/common/types.h"

#define RDMQ_PROTOCOL_CODEC_ERRORS(X) X(kMalformed, kCorruption, "malformed protocol message")
RDMQ_DEFINE_ERRORS(rdmq::protocol, CodecErrc, "protocol-codec", RDMQ_PROTOCOL_CODEC_ERRORS)

namespace rdmq::protocol {

inline constexpr uint32_t kMaxStringBytes = 65535;
inline constexpr uint32_t kMaxBlobBytes = 64u << 20;
inline constexpr uint32_t kMaxArrayCount = 1'000'000;

// A byte string that is not text (descriptors, record bytes): encoded like a string but allowed
// to be up to kMaxBlobBytes.
struct Blob {
  std::string bytes;
  bool operator==(const Blob&) const = default;
};

namespace internal {

template <class T, class = void>
struct IsMessage : std::false_type {};
struct NullVisitor {
  template <class F>
  void operator()(F&) {}
};
template <class T>
struct IsMessage<T, std::void_t<decltype(std::declval<T&>().Visit(std::declval<NullVisitor&>()))>>
    : std::true_type {};

template <class T>
struct IsStrongInt : std::false_type {};
template <class Tag, class Rep>
struct IsStrongInt<StrongInt<Tag, Rep>> : std::true_type {};

class EncodeVisitor {
 public:
  explicit EncodeVisitor(std::string* out) : w_(out) {}
  template <class T>
  void operator()(const T& v) {
    if constexpr (std::is_enum_v<T>) {
      w_.LE(static_cast<std::underlying_type_t<T>>(v));
    } else if constexpr (std::is_integral_v<T>) {
      w_.LE(v);
    } else if constexpr (IsStrongInt<T>::value) {
      w_.LE(v.value());
    } else if constexpr (std::is_same_v<T, std::string>) {
      w_.LE<uint32_t>(static_cast<uint32_t>(v.size()));
      w_.Bytes(v);
    } else if constexpr (std::is_same_v<T, Blob>) {
      (*this)(v.bytes);
    } else if constexpr (IsMessage<T>::value) {
      const_cast<T&>(v).Visit(*this);
    } else {
      static_assert(sizeof(T) == 0, "unsupported field type");
    }
  }
  template <class T>
  void operator()(const std::vector<T>& v) {
    w_.LE<uint32_t>(static_cast<uint32_t>(v.size()));
    for (const auto& e : v) (*this)(e);
  }

 private:
  coding::Writer w_;
};

class DecodeVisitor {
 public:
  explicit DecodeVisitor(coding::Reader* r) : r_(r) {}
  template <class T>
  void operator()(T& v) {
    if (!r_->ok()) return;
    if constexpr (std::is_enum_v<T>) {
      v = static_cast<T>(r_->LE<std::underlying_type_t<T>>());
    } else if constexpr (std::is_integral_v<T>) {
      v = r_->LE<T>();
    } else if constexpr (IsStrongInt<T>::value) {
      v = T(r_->LE<typename T::rep>());
    } else if constexpr (std::is_same_v<T, std::string>) {
      ReadBytes(&v, kMaxStringBytes);
    } else if constexpr (std::is_same_v<T, Blob>) {
      ReadBytes(&v.bytes, kMaxBlobBytes);
    } else if constexpr (IsMessage<T>::value) {
      v.Visit(*this);
    } else {
      static_assert(sizeof(T) == 0, "unsupported field type");
    }
  }
  template <class T>
  void operator()(std::vector<T>& v) {
    const uint32_t n = r_->LE<uint32_t>();
    // Every element takes at least one byte, so a count beyond the remaining bytes is a lie.
    if (!r_->ok() || n > kMaxArrayCount || n > r_->remaining()) {
      r_->Fail();
      return;
    }
    v.clear();
    v.resize(n);
    for (auto& e : v) {
      (*this)(e);
      if (!r_->ok()) return;
    }
  }

 private:
  void ReadBytes(std::string* out, uint32_t limit) {
    const uint32_t n = r_->LE<uint32_t>();
    if (!r_->ok() || n > limit) {
      r_->Fail();
      return;
    }
    const auto b = r_->Bytes(n);
    if (r_->ok()) out->assign(reinterpret_cast<const char*>(b.data()), b.size());
  }
  coding::Reader* r_;
};

}  // namespace internal

template <class M>
void EncodeTo(const M& m, std::string* out) {
  internal::EncodeVisitor v(out);
  v(m);
}

template <class M>
std::string Encode(const M& m) {
  std::string out;
  EncodeTo(m, &out);
  return out;
}

// Decodes a message from `r`, leaving the reader after it.
template <class M>
Status DecodeFrom(coding::Reader* r, M* m) {
  internal::DecodeVisitor v(r);
  v(*m);
  if (!r->ok()) return Status(CodecErrc::kMalformed, "truncated or oversized field");
  return Status::Ok();
}

// Decodes a message that must span all of `bytes`.
template <class M>
Result<M> Decode(std::span<const std::byte> bytes) {
  coding::Reader r(bytes);
  M m{};
  RDMQ_RETURN_IF_ERROR(DecodeFrom(&r, &m));
  if (r.remaining() != 0) {
    return Status(CodecErrc::kMalformed, std::to_string(r.remaining()) + " trailing bytes");
  }
  return m;
}

}  // namespace rdmq::protocol
