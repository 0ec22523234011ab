#include "rdmq/producer/partitioner.h"

#include <cstring>

namespace rdmq::producer {

int32_t Murmur2(const void* data, size_t size) noexcept {
  // Arithmetic in uint32_t wraps like Java's int; the bit patterns are identical.
  constexpr uint32_t kSeed = 0x9747b28c;
  constexpr uint32_t m = 0x5bd1e995;
  constexpr int r = 24;
  const auto* p = static_cast<const unsigned char*>(data);
  const auto length = static_cast<uint32_t>(size);
  uint32_t h = kSeed ^ length;
  const size_t words = size / 4;
  for (size_t i = 0; i < words; ++i) {
    uint32_t k;
    std::memcpy(&k, p + 4 * i, 4);  // little-endian, as Java assembles the bytes
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  const unsigned char* tail = p + 4 * words;
  switch (size % 4) {
    case 3:
      h ^= static_cast<uint32_t>(tail[2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= static_cast<uint32_t>(tail[1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= tail[0];
      h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return static_cast<int32_t>(h);
}

}  // namespace rdmq::producer
