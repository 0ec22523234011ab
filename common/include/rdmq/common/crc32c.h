// CRC-32C (Castagnoli), as used by Kafka's RecordBatch v2 and by rdmq's on-media structures.
// Backed by Intel ISA-L's crc32_iscsi (SSE4.2/PCLMUL/AVX-512 paths picked at run time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace rdmq::crc32c {

// Extends `crc` (the CRC of the bytes before) over `data`. Start with Extend(0, ...).
uint32_t Extend(uint32_t crc, const void* data, size_t n) noexcept;

inline uint32_t Value(const void* data, size_t n) noexcept { return Extend(0, data, n); }
inline uint32_t Value(std::span<const std::byte> s) noexcept { return Extend(0, s.data(), s.size()); }

}  // namespace rdmq::crc32c
