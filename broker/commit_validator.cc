#include "commit_validator.h"

#include <string>

#include "rdmq/protocol/messages.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::broker::internal {

using protocol::WireError;

namespace {
std::string Str(std::string_view s) { return std::string(s); }
}  // namespace

Status CommitValidator::CheckImmediate(const Committer& c, Offset lease_segment, const ActiveSegment& active,
                                       uint64_t length) const {
  if (c.shared) return Status(WireError::kInvalidRequest, "shared leases commit with the Commit RPC");
  if (lease_segment != active.base) {
    return Status(WireError::kStaleLocation, "segment " + std::to_string(lease_segment.value()) + " of " +
                                                 Str(where_) + " is no longer the active one (" +
                                                 std::to_string(active.base.value()) + ")");
  }
  const uint64_t pos = active.committed.value();
  if (length == 0 || length > active.capacity - pos) {
    return Status(WireError::kOutOfCredit,
                  "commit of " + std::to_string(length) + " bytes at position " + std::to_string(pos) +
                      " of " + Str(where_) + " runs past the credit end " + std::to_string(active.capacity));
  }
  return Status::Ok();
}

Result<bool> CommitValidator::CheckRequest(const Committer& c, bool segment_writable, Offset segment,
                                           Position position, uint64_t length, uint64_t capacity,
                                           const ActiveSegment& active) const {
  if (!segment_writable) {
    return Status(WireError::kStaleLocation,
                  "segment " + std::to_string(segment.value()) + " of " + Str(where_) +
                      " is not open for writing (active: " + std::to_string(active.base.value()) + ")");
  }
  if (length == 0) return Status(WireError::kInvalidRequest, "commit of 0 bytes");
  const uint64_t pos = position.value();
  if (pos >= capacity || length > capacity - pos) return false;
  if (!c.shared && position != active.committed) {
    return Status(WireError::kInvalidRequest, "exclusive commit at position " + std::to_string(pos) + " of " +
                                                  Str(where_) + "; the committed end is " +
                                                  std::to_string(active.committed.value()));
  }
  return true;
}

BatchCheck CommitValidator::CheckBatches(const Committer& c, std::span<std::byte> range) const {
  BatchCheck out;
  const bool idempotent = c.producer_id.value() >= 0;
  ProducerState st;
  if (idempotent) st = producers_.Expected(c.producer_id, c.producer_epoch);
  std::byte* data = range.data();
  const uint64_t len = range.size();
  uint64_t pos = 0;
  while (pos < len) {
    storage::BatchHeader h;
    if (!storage::DecodeBatchHeader({data + pos, len - pos}, &h).ok()) break;
    const uint64_t size = h.total_size();
    if (size > max_batch_) {
      out.status = Status(WireError::kRecordTooLarge, "a batch of " + std::to_string(size) + " bytes in " +
                                                          Str(where_) + " exceeds max.message.bytes " +
                                                          std::to_string(max_batch_));
      return out;
    }
    if (h.producer_id != c.producer_id || (idempotent && h.producer_epoch != c.producer_epoch)) {
      out.status =
          Status(WireError::kInvalidProducerEpoch,
                 "batch at byte " + std::to_string(pos) + " of the range carries producer " +
                     std::to_string(h.producer_id.value()) + " epoch " + std::to_string(h.producer_epoch) +
                     ", the lease is for producer " + std::to_string(c.producer_id.value()) + " epoch " +
                     std::to_string(c.producer_epoch));
      return out;
    }
    if (idempotent && !h.is_control()) {
      const int64_t count = h.offset_count();
      const int64_t seq = h.base_sequence;
      const int64_t expected = int64_t{st.last_sequence} + 1;
      if (seq == expected) {
        if (out.first_sequence < 0) out.first_sequence = h.base_sequence;
        st.last_sequence = static_cast<int32_t>(seq + count - 1);
      } else if (seq >= 0 && seq + count - 1 <= st.last_sequence) {
        ++out.duplicates;
        if (!c.shared) {
          out.status = Status(WireError::kDuplicateSequence,
                              "producer " + std::to_string(c.producer_id.value()) + " sequence " +
                                  std::to_string(seq) + ".." + std::to_string(seq + count - 1) +
                                  " is already committed in " + Str(where_) + " (last sequence " +
                                  std::to_string(st.last_sequence) + ")");
          return out;
        }
        // A resend of what is already committed: replace it in place by a filler so it is not
        // delivered twice.
        if (Status s = storage::WriteFillerBatch({data + pos, size}, kNoOffset, h.max_timestamp); !s.ok()) {
          out.status = s;
          return out;
        }
      } else {
        out.status =
            Status(WireError::kOutOfOrderSequence,
                   "producer " + std::to_string(c.producer_id.value()) + " sent sequence " +
                       std::to_string(seq) + " to " + Str(where_) + ", expected " + std::to_string(expected));
        return out;
      }
    }
    pos += size;
  }
  out.next = st;
  return out;
}

}  // namespace rdmq::broker::internal
