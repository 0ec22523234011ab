#include "producer/arena.h"

#include <algorithm>
#include <string>

namespace rdmq::producer {

Status Arena::Init(fabric::Fabric& fabric, size_t chunk_size, size_t chunks) {
  chunk_size_ = chunk_size;
  RDMQ_ASSIGN_OR_RETURN(region_, fabric.Allocate(chunks * chunk_size, fabric::kLocalWrite));
  base_ = region_->data();
  chunks_.resize(chunks);
  MutexLock lock(mu_);
  used_.assign(chunks, false);
  for (size_t i = 0; i < chunks; ++i) {
    chunks_[i].index = static_cast<uint32_t>(i);
    free_.push_back(static_cast<uint32_t>(chunks - 1 - i));
  }
  return Status::Ok();
}

Result<Chunk*> Arena::TryAllocate(uint32_t n) {
  MutexLock lock(mu_);
  if (n == 1 && !free_.empty()) {
    const uint32_t i = free_.back();
    free_.pop_back();
    used_[i] = true;
    chunks_[i].span = 1;
    chunks_[i].refs = 0;
    return &chunks_[i];
  }
  if (n > 1) {
    for (size_t start = 0; start + n <= chunks_.size(); ++start) {
      bool ok = true;
      for (size_t k = start; k < start + n && ok; ++k) ok = !used_[k];
      if (!ok) continue;
      for (size_t k = start; k < start + n; ++k) {
        used_[k] = true;
        free_.erase(std::find(free_.begin(), free_.end(), static_cast<uint32_t>(k)));
      }
      chunks_[start].span = n;
      chunks_[start].refs = 0;
      return &chunks_[start];
    }
    if (n > chunks_.size()) {
      return Status(Errc::kInvalidArgument,
                    "a record needs " + std::to_string(n * chunk_size_) + " bytes, more than buffer.memory");
    }
  }
  return static_cast<Chunk*>(nullptr);
}

bool Arena::HasRoom(uint32_t n) {
  MutexLock lock(mu_);
  return !free_.empty() && (n == 1 || free_.size() >= n);
}

void Arena::Free(const Chunk& c) {
  MutexLock lock(mu_);
  for (uint32_t k = c.index; k < c.index + c.span; ++k) {
    used_[k] = false;
    free_.push_back(k);
  }
}

}  // namespace rdmq::producer
