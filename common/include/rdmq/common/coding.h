// Byte coding: fixed-width big- and little-endian integers, Kafka's zigzag varints, and a
// bounds-checked reader for decoding untrusted bytes.
//
// Kafka's RecordBatch uses big-endian fixed fields and zigzag varints; rdmq's own on-media and
// wire structures (segment header, partition slot, RPC messages) use little-endian fixed fields,
// since both ends are x86-64/arm64 and the data is read in place by remote peers.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace rdmq::coding {

static_assert(std::endian::native == std::endian::little, "rdmq assumes a little-endian host");

template <class T>
inline T LoadLE(const void* p) noexcept {
  static_assert(std::is_integral_v<T>);
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
inline void StoreLE(void* p, T v) noexcept {
  static_assert(std::is_integral_v<T>);
  std::memcpy(p, &v, sizeof v);
}
// std::byteswap is C++23; the builtins compile to one bswap/movbe.
template <class U>
inline constexpr U ByteSwap(U v) noexcept {
  static_assert(std::is_unsigned_v<U>);
  if constexpr (sizeof(U) == 1) {
    return v;
  } else if constexpr (sizeof(U) == 2) {
    return __builtin_bswap16(v);
  } else if constexpr (sizeof(U) == 4) {
    return __builtin_bswap32(v);
  } else {
    static_assert(sizeof(U) == 8);
    return __builtin_bswap64(v);
  }
}
template <class T>
inline T LoadBE(const void* p) noexcept {
  return static_cast<T>(ByteSwap(LoadLE<std::make_unsigned_t<T>>(p)));
}
template <class T>
inline void StoreBE(void* p, T v) noexcept {
  StoreLE(p, ByteSwap(static_cast<std::make_unsigned_t<T>>(v)));
}

inline constexpr uint32_t ZigZag32(int32_t v) noexcept {
  return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
}
inline constexpr uint64_t ZigZag64(int64_t v) noexcept {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline constexpr int32_t UnZigZag32(uint32_t v) noexcept {
  return static_cast<int32_t>(v >> 1) ^ -static_cast<int32_t>(v & 1);
}
inline constexpr int64_t UnZigZag64(uint64_t v) noexcept {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Number of bytes the unsigned LEB128 encoding of v takes (1..10).
inline constexpr size_t VarintLength(uint64_t v) noexcept {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
inline constexpr size_t VarintLengthSigned(int64_t v) noexcept { return VarintLength(ZigZag64(v)); }

// Writes the unsigned LEB128 encoding of v at p (room for 10 bytes needed); returns the end.
inline std::byte* PutVarint(std::byte* p, uint64_t v) noexcept {
  while (v >= 0x80) {
    *p++ = static_cast<std::byte>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<std::byte>(v);
  return p;
}
inline std::byte* PutVarintSigned(std::byte* p, int64_t v) noexcept { return PutVarint(p, ZigZag64(v)); }

// Appends encodings to a growable byte string.
class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  void Bytes(const void* p, size_t n) { out_->append(static_cast<const char*>(p), n); }
  void Bytes(std::string_view s) { out_->append(s); }
  template <class T>
  void LE(T v) {
    char b[sizeof(T)];
    StoreLE(b, v);
    out_->append(b, sizeof b);
  }
  template <class T>
  void BE(T v) {
    char b[sizeof(T)];
    StoreBE(b, v);
    out_->append(b, sizeof b);
  }
  void U8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void Varint(uint64_t v) {
    std::byte b[10];
    out_->append(reinterpret_cast<const char*>(b), static_cast<size_t>(PutVarint(b, v) - b));
  }
  void VarintSigned(int64_t v) { Varint(ZigZag64(v)); }
  size_t size() const { return out_->size(); }

 private:
  std::string* out_;
};

// Bounds-checked decoding of untrusted bytes. Every read past the end, or a varint that is too
// long or overflows its type, puts the reader into a sticky failed state: later reads return
// zero/empty and ok() stays false. Decoders check ok() at decision points and at the end, so no
// input can make them read outside the span.
class Reader {
 public:
  Reader() = default;
  explicit Reader(std::span<const std::byte> data) : p_(data.data()), end_(data.data() + data.size()) {}
  Reader(const void* p, size_t n)
      : p_(static_cast<const std::byte*>(p)), end_(static_cast<const std::byte*>(p) + n) {}

  bool ok() const noexcept { return ok_; }
  size_t remaining() const noexcept { return ok_ ? static_cast<size_t>(end_ - p_) : 0; }
  const std::byte* here() const noexcept { return p_; }
  void Fail() noexcept {
    ok_ = false;
    p_ = end_;
  }

  template <class T>
  T LE() noexcept {
    if (!Need(sizeof(T))) return T{};
    T v = LoadLE<T>(p_);
    p_ += sizeof(T);
    return v;
  }
  template <class T>
  T BE() noexcept {
    if (!Need(sizeof(T))) return T{};
    T v = static_cast<T>(LoadBE<T>(p_));
    p_ += sizeof(T);
    return v;
  }
  uint8_t U8() noexcept { return LE<uint8_t>(); }

  // Unsigned LEB128 of at most max_bytes bytes (5 for 32-bit, 10 for 64-bit values).
  uint64_t Varint(size_t max_bytes = 10) noexcept {
    uint64_t v = 0;
    for (size_t i = 0; i < max_bytes; ++i) {
      if (!Need(1)) return 0;
      const auto b = static_cast<uint8_t>(*p_++);
      if (i == 9 && b > 1) break;  // would overflow 64 bits
      v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) return v;
    }
    Fail();
    return 0;
  }
  // Kafka "varint": zigzag int32 in at most 5 bytes.
  int32_t VarintSigned32() noexcept {
    const uint64_t u = Varint(5);
    if (u > 0xffffffffULL) {
      Fail();
      return 0;
    }
    return UnZigZag32(static_cast<uint32_t>(u));
  }
  // Kafka "varlong": zigzag int64 in at most 10 bytes.
  int64_t VarintSigned64() noexcept { return UnZigZag64(Varint(10)); }

  // A view of the next n bytes (empty and failed if fewer remain).
  std::span<const std::byte> Bytes(size_t n) noexcept {
    if (!Need(n)) return {};
    std::span<const std::byte> s(p_, n);
    p_ += n;
    return s;
  }
  void Skip(size_t n) noexcept { (void)Bytes(n); }

 private:
  bool Need(size_t n) noexcept {
    if (!ok_ || static_cast<size_t>(end_ - p_) < n) {
      Fail();
      return false;
    }
    return true;
  }
  const std::byte* p_ = nullptr;
  const std::byte* end_ = nullptr;
  bool ok_ = true;
};

inline std::span<const std::byte> AsBytes(std::string_view s) noexcept {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
inline std::string_view AsChars(std::span<const std::byte> s) noexcept {
  return {reinterpret_cast<const char*>(s.data()), s.size()};
}

}  // namespace rdmq::coding
