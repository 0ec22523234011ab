// SendFuture's shared state: one per batch, shared by the futures of its records and the batch
// itself until it completes, and counted by reference (`refs`). The batch holds its state through
// a StateRef, which takes its futures' references in bulk: one atomic add per kBulkRefs records,
// not one per record on the sending thread's path.
//
// Threading: the producer fills `status`, `base_offset` and `records` under the partition's
// lock, then publishes them with `done` (release); readers look at them only once `done` is set
// (acquire). `refs` is atomic; a StateRef is its batch's (under the partition's lock).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/common/types.h"
#include "rdmq/producer/producer.h"

namespace rdmq::producer {

class Core;

// What a record's metadata needs beyond its batch's.
struct RecordInfo {
  TimestampMs timestamp{0};
  uint32_t key_size = 0;
  uint32_t value_size = 0;
};

}  // namespace rdmq::producer

struct rdmq::producer::SendFuture::State {
  std::shared_ptr<Core> core;  // drives progress while a caller waits
  std::atomic<int> done{0};
  Status status;
  std::string_view topic;  // points into the producer's topic table (lives as long as core)
  PartitionId partition{0};
  Offset base_offset = kNoOffset;  // kNoOffset with acks=0
  std::vector<RecordInfo> records;
  std::atomic<uint32_t> refs{1};  // the creator's

  // Drops `n` references; the last one deletes the state.
  void Unref(uint32_t n) {
    if (refs.fetch_sub(n, std::memory_order_acq_rel) == n) delete this;
  }

  bool ready() const { return done.load(std::memory_order_acquire) != 0; }
  // The metadata of record `index` of a batch that succeeded.
  RecordMetadata Metadata(uint32_t index) const {
    RecordMetadata md;
    md.topic = std::string(topic);
    md.partition = partition.value();
    md.offset = base_offset < Offset(0) ? -1 : (base_offset + index).value();
    if (index < records.size()) {
      md.timestamp_ms = records[index].timestamp.value();
      md.serialized_key_size = records[index].key_size;
      md.serialized_value_size = records[index].value_size;
    }
    return md;
  }
};

namespace rdmq::producer {

// A batch's hold on its state: one reference of its own, and references taken in bulk for the
// futures it hands out. Move-only.
class StateRef {
 public:
  static constexpr uint32_t kBulkRefs = 64;

  StateRef() = default;
  static StateRef Make() { return StateRef(new SendFuture::State()); }
  StateRef(StateRef&& o) noexcept : p_(std::exchange(o.p_, nullptr)), spare_(std::exchange(o.spare_, 0)) {}
  StateRef& operator=(StateRef&& o) noexcept {
    if (this != &o) {
      Reset();
      p_ = std::exchange(o.p_, nullptr);
      spare_ = std::exchange(o.spare_, 0);
    }
    return *this;
  }
  StateRef(const StateRef&) = delete;
  StateRef& operator=(const StateRef&) = delete;
  ~StateRef() { Reset(); }

  SendFuture::State* operator->() const { return p_; }
  SendFuture::State& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }

  // The future of record `index`, holding one of the references taken in bulk.
  SendFuture Future(uint32_t index) {
    if (spare_ == 0) {
      p_->refs.fetch_add(kBulkRefs, std::memory_order_relaxed);
      spare_ = kBulkRefs;
    }
    --spare_;
    return SendFuture(p_, index);
  }

 private:
  explicit StateRef(SendFuture::State* p) : p_(p) {}
  void Reset() {
    if (p_ != nullptr) p_->Unref(1 + spare_);
    p_ = nullptr;
    spare_ = 0;
  }

  SendFuture::State* p_ = nullptr;
  uint32_t spare_ = 0;  // references taken for futures not handed out yet
};

// A future that is already failed with `s` (a Send refused before the record was taken).
inline SendFuture FailedFuture(Status s) {
  auto* st = new SendFuture::State();
  st->status = std::move(s);
  st->done.store(1);
  return SendFuture(st, 0);  // takes the creator's reference
}

}  // namespace rdmq::producer
