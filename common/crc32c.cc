#include "rdmq/common/crc32c.h"

#include <isa-l/crc.h>

#include <climits>

namespace rdmq::crc32c {

uint32_t Extend(uint32_t crc, const void* data, size_t n) noexcept {
  // crc32_iscsi works on the non-inverted register and takes an int length.
  uint32_t reg = ~crc;
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  while (n > 0) {
    const size_t chunk = n > static_cast<size_t>(INT_MAX) ? static_cast<size_t>(INT_MAX) : n;
    reg = crc32_iscsi(p, static_cast<int>(chunk), reg);
    p += chunk;
    n -= chunk;
  }
  return ~reg;
}

}  // namespace rdmq::crc32c
