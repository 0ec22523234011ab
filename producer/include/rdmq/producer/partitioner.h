// Key → partition, exactly as Apache Kafka's Java client does it, so a key lands on the same
// partition number in rdmq as in Kafka: toPositive(murmur2(key)) % partitions, where murmur2 is
// MurmurHash2 (32-bit, seed 0x9747b28c) over the key bytes. Records without a key are spread by
// the producer (sticky partitioning), not by this function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace rdmq::producer {

// Kafka's Utils.murmur2: returns the signed 32-bit value the Java client computes.
int32_t Murmur2(const void* data, size_t size) noexcept;
inline int32_t Murmur2(std::string_view s) noexcept { return Murmur2(s.data(), s.size()); }

// Kafka's Utils.toPositive(murmur2(key)): the key's partition is this modulo the count.
inline uint32_t KeyHash(std::string_view key) noexcept {
  return static_cast<uint32_t>(Murmur2(key) & 0x7fffffff);
}
// Kafka's Utils.toPositive(murmur2(key)) % num_partitions. num_partitions must be > 0.
inline int32_t PartitionForKey(std::string_view key, int32_t num_partitions) noexcept {
  return static_cast<int32_t>(KeyHash(key) % static_cast<uint32_t>(num_partitions));
}

}  // namespace rdmq::producer
