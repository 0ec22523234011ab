// The record arena: `buffer.memory` bytes of registered memory that batches are built in, in
// chunks of at least `batch.size` (docs/architecture.md, "Producer"). A partition carves its
// batches one after another from its current chunk (ChunkCursor); a chunk returns to the free
// list when its partition has moved on from it and every batch in it is acknowledged.
//
// Threading: Arena is thread-safe (its free list has its own lock). A Chunk's `refs` belongs to
// the partition that carves it and is touched only through that partition's ChunkCursor, under
// the partition's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::producer {

struct Chunk {
  uint32_t index = 0;
  uint32_t span = 1;  // chunks it covers (large records)
  uint32_t refs = 0;  // batches alive in it, plus 1 while it is a partition's current chunk
};

class Arena {
 public:
  // Registers `chunks` chunks of `chunk_size` bytes on `fabric`.
  Status Init(fabric::Fabric& fabric, size_t chunk_size, size_t chunks);

  size_t chunk_size() const { return chunk_size_; }
  size_t chunks() const { return chunks_.size(); }
  fabric::Region* region() const { return region_.get(); }
  std::byte* data(const Chunk& c) const { return base_ + uint64_t{c.index} * chunk_size_; }

  // `n` contiguous free chunks (refs 0), or nullptr when there are none now; kInvalidArgument
  // when `n` is more than the whole arena.
  Result<Chunk*> TryAllocate(uint32_t n) EXCLUDES(mu_);
  // True if an allocation of `n` chunks may succeed now.
  bool HasRoom(uint32_t n) EXCLUDES(mu_);
  void Free(const Chunk& c) EXCLUDES(mu_);

 private:
  size_t chunk_size_ = 0;
  std::unique_ptr<fabric::Region> region_;
  std::byte* base_ = nullptr;
  std::vector<Chunk> chunks_;
  Mutex mu_;
  std::vector<uint32_t> free_ GUARDED_BY(mu_);  // any order
  std::vector<bool> used_ GUARDED_BY(mu_);
};

// A partition's position in its current chunk. Guarded by the partition's lock.
class ChunkCursor {
 public:
  // True if a batch of `capacity` bytes fits in the rest of the current chunk.
  bool Fits(size_t capacity, size_t chunk_size) const {
    return cur_ != nullptr && cur_->span * chunk_size - off_ >= capacity;
  }
  // Leaves the current chunk; returns it if nothing holds it any more (the caller frees it).
  Chunk* Retire() {
    Chunk* old = cur_;
    if (old == nullptr) return nullptr;
    cur_ = nullptr;
    return --old->refs == 0 ? old : nullptr;
  }
  // Makes a freshly allocated chunk the current one.
  void Start(Chunk* c) {
    c->refs = 1;  // held as the current chunk
    cur_ = c;
    off_ = 0;
  }
  // A batch starts at the cursor: it holds the chunk until Unref.
  Chunk* Take() {
    ++cur_->refs;
    return cur_;
  }
  size_t offset() const { return off_; }
  // A batch of `size` bytes was sealed at the cursor: the next starts 64-byte aligned after it.
  void Advance(size_t size) { off_ += (size + 63) & ~size_t{63}; }
  // A batch in `c` is done; true if `c` is free now (the caller frees it).
  static bool Unref(Chunk* c) { return --c->refs == 0; }

 private:
  Chunk* cur_ = nullptr;
  size_t off_ = 0;
};

}  // namespace rdmq::producer
