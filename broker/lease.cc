#include "lease.h"

#include <string>

#include "rdmq/protocol/data_plane.h"
#include "session.h"

namespace rdmq::broker::internal {

using protocol::WireError;

LeaseTable::LeaseTable(uint32_t max_leases) : max_(max_leases) {
  MutexLock lock(mu_);
  slots_.resize(max_leases);
  reuse_.assign(max_leases, 0);
  free_.reserve(max_leases);
  for (uint32_t i = max_leases; i > 0; --i) free_.push_back(i - 1);
}

Status LeaseTable::Reserve(const std::shared_ptr<Lease>& l) {
  MutexLock lock(mu_);
  if (free_.empty()) {
    return Status(WireError::kUnavailable,
                  "this broker holds " + std::to_string(max_) + " leases, its maximum; retry later");
  }
  const uint32_t slot = free_.back();
  free_.pop_back();
  l->id = LeaseId(next_id_++);
  l->index = slot | (uint32_t{reuse_[slot]} << protocol::kLeaseSlotBits);
  slots_[slot] = l;
  return Status::Ok();
}

void LeaseTable::Publish(const std::shared_ptr<Lease>& l) {
  MutexLock lock(mu_);
  by_id_[l->id] = l;
}

void LeaseTable::Remove(const Lease& l) {
  MutexLock lock(mu_);
  by_id_.erase(l.id);
  const uint32_t slot = protocol::LeaseSlot(l.index);
  if (slot < slots_.size() && slots_[slot].get() == &l) {
    slots_[slot].reset();
    ++reuse_[slot];
    free_.push_back(slot);
  }
}

Result<std::shared_ptr<Lease>> LeaseTable::Find(LeaseId id, uint64_t client_id) const {
  MutexLock lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) {
    return Status(WireError::kLeaseExpired,
                  "lease " + std::to_string(id.value()) + " is unknown, expired or released");
  }
  if (it->second->session->client_id != client_id) {
    return Status(WireError::kLeaseExpired,
                  "lease " + std::to_string(id.value()) + " belongs to another client");
  }
  return it->second;
}

std::shared_ptr<Lease> LeaseTable::ById(LeaseId id) const {
  MutexLock lock(mu_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

std::shared_ptr<Lease> LeaseTable::ByIndex(uint32_t index) const {
  MutexLock lock(mu_);
  const uint32_t slot = protocol::LeaseSlot(index);
  if (slot >= slots_.size() || !slots_[slot] || slots_[slot]->index != index) return nullptr;
  return slots_[slot];
}

size_t LeaseTable::size() const {
  MutexLock lock(mu_);
  return by_id_.size();
}

}  // namespace rdmq::broker::internal
