// Strong types for the quantities that are easy to mix up: record offsets, byte positions,
// partition numbers, ids. They are plain integers at run time; mixing them is a compile error.
//
//   Offset o{41}; ++o;                 // next record offset
//   Position p{4096}; p += 100;        // byte position
//   int64_t n = o2 - o1;               // distance between two offsets
//   Offset bad = p;                    // does not compile
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>

namespace rdmq {

template <class Tag, class Rep>
class StrongInt {
 public:
  using rep = Rep;
  constexpr StrongInt() noexcept = default;
  constexpr explicit StrongInt(Rep v) noexcept : v_(v) {}
  constexpr Rep value() const noexcept { return v_; }

  constexpr auto operator<=>(const StrongInt&) const noexcept = default;
  constexpr bool operator==(const StrongInt&) const noexcept = default;

  constexpr StrongInt& operator+=(Rep d) noexcept {
    v_ += d;
    return *this;
  }
  constexpr StrongInt& operator-=(Rep d) noexcept {
    v_ -= d;
    return *this;
  }
  constexpr StrongInt& operator++() noexcept {
    ++v_;
    return *this;
  }
  constexpr StrongInt operator++(int) noexcept {
    StrongInt t = *this;
    ++v_;
    return t;
  }
  friend constexpr StrongInt operator+(StrongInt a, Rep d) noexcept { return StrongInt(a.v_ + d); }
  friend constexpr StrongInt operator-(StrongInt a, Rep d) noexcept { return StrongInt(a.v_ - d); }
  // The distance between two values of the same kind is a plain number.
  friend constexpr Rep operator-(StrongInt a, StrongInt b) noexcept { return a.v_ - b.v_; }

  static constexpr StrongInt max() noexcept { return StrongInt(std::numeric_limits<Rep>::max()); }
  static constexpr StrongInt min() noexcept { return StrongInt(std::numeric_limits<Rep>::min()); }

  friend std::ostream& operator<<(std::ostream& os, StrongInt s) { return os << +s.v_; }

 private:
  Rep v_{};
};

// Logical offset of a record within a partition (Kafka's offset). -1 means "not assigned".
using Offset = StrongInt<struct OffsetTag, int64_t>;
inline constexpr Offset kNoOffset{-1};
// Byte position within a segment's data area (0 = first byte after the segment header).
using Position = StrongInt<struct PositionTag, uint64_t>;
// Partition number within a topic.
using PartitionId = StrongInt<struct PartitionTag, int32_t>;
// Topic id: stable for the topic's life, never reused.
using TopicId = StrongInt<struct TopicIdTag, uint64_t>;
// Kafka's idempotent-producer identity.
using ProducerId = StrongInt<struct ProducerIdTag, int64_t>;
inline constexpr ProducerId kNoProducerId{-1};
// Lease granted by the broker for appending to a partition.
using LeaseId = StrongInt<struct LeaseIdTag, uint64_t>;
// Milliseconds since the Unix epoch (Kafka's record timestamps).
using TimestampMs = StrongInt<struct TimestampTag, int64_t>;

}  // namespace rdmq

template <class Tag, class Rep>
struct std::hash<rdmq::StrongInt<Tag, Rep>> {
  size_t operator()(rdmq::StrongInt<Tag, Rep> v) const noexcept { return std::hash<Rep>()(v.value()); }
};
