#include "rpc/ring.h"

namespace rdmq::rpc {

Probe RingReader::Peek() const noexcept {
  const uint64_t off = head_ % capacity_;
  const std::byte* p = ring_ + off;
  const uint64_t canary = LoadAcquire64(p);
  if (canary == 0) return {ProbeState::kEmpty, 0};
  // The rest of the header may still be in flight: read it word by word and only trust it once
  // the trailing canary matches (then Parse re-reads it).
  const uint64_t word1 = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(ring_ + off + 8))
                             .load(std::memory_order_acquire);
  const auto magic = static_cast<uint16_t>(word1 & 0xffff);
  const auto version = static_cast<uint8_t>((word1 >> 16) & 0xff);
  const auto length = static_cast<uint32_t>(word1 >> 32);
  if (magic != kMagic || version != kVersion || length < kMinMessage || length % kMessageAlign != 0 ||
      length > max_message() || off + length > capacity_) {
    return {ProbeState::kBadHeader, 0};
  }
  const uint64_t trailing = LoadAcquire64(p + length - kCanarySize);
  if (trailing != canary) return {ProbeState::kIncomplete, length};
  return {ProbeState::kReady, length};
}

Result<MessageView> RingReader::Parse(uint32_t length) const {
  const uint64_t off = head_ % capacity_;
  return ParseMessage(std::span<const std::byte>(ring_ + off, length), head_, responses_);
}

void RingReader::Release(uint32_t length) noexcept {
  const uint64_t off = head_ % capacity_;
  // Zero the slot words in reverse, the header's canary last: until then the message still
  // reads as present, never as a half-cleared header.
  for (uint64_t slot = length; slot >= kMessageAlign; slot -= kMessageAlign) {
    StoreRelease64(ring_ + off + slot - kMessageAlign, 0);
  }
  head_ += length;
}

}  // namespace rdmq::rpc
