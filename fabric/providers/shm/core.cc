#include "core.h"

#include <string>
#include <string_view>

#include "fabric/address.h"
#include "fabric/socket.h"

namespace rdmq::fabric::internal {

Result<int> RegionFds::ReadOnly() {
  if (rw_is_read_only) return rw.get();
  MutexLock l(mu);
  if (!ro.valid()) {
    RDMQ_ASSIGN_OR_RETURN(ro, ReopenReadOnly(rw.get()));
  }
  return ro.get();
}

ShmCore::~ShmCore() {
  // Nothing may run on the agent while members go away: its callbacks use them.
  agent.Stop();
  if (!path_.empty()) ::unlink(path_.c_str());
}

Status ShmCore::Init(const FabricOptions& o) {
  RDMQ_ASSIGN_OR_RETURN(keypage_fd_, CreateMemfd("rdmq-shm-keys", kKeyPageBytes));
  RDMQ_ASSIGN_OR_RETURN(keypage_, MapShared(keypage_fd_.get(), kKeyPageBytes, 0, true, "shm key page"));
  auto ro = ReopenReadOnly(keypage_fd_.get());
  if (!ro.ok()) return ro.status().WithContext("shm key page");
  keypage_ro_fd_ = std::move(ro).value();
  if (!o.listen.empty()) {
    path_ = std::string(DropScheme(o.listen, "unix"));
    RDMQ_ASSIGN_OR_RETURN(UniqueFd lfd, ListenUnix(path_));
    Listen(std::move(lfd), "unix:" + path_);
  }
  return Status::Ok();
}

Result<uint64_t> ShmCore::AddKey(ShmKey k) {
  {
    MutexLock l(slots_mu_);
    if (!free_slots_.empty()) {
      k.slot = free_slots_.back();
      free_slots_.pop_back();
    } else if (next_slot_ < kKeyPageSlots) {
      k.slot = next_slot_++;
    } else {
      return Status(Errc::kResourceExhausted,
                    "shm fabric: all " + std::to_string(kKeyPageSlots) + " keys in use");
    }
  }
  return keys_.Add(std::move(k), [this](uint64_t key, const ShmKey& e) {
    Slot(e.slot)->store(key, std::memory_order_release);
  });
}

void ShmCore::RevokeKey(uint64_t key) {
  keys_.Revoke(key, [this](const ShmKey& e) {
    Slot(e.slot)->store(0, std::memory_order_release);
    MutexLock l(slots_mu_);
    free_slots_.push_back(e.slot);
  });
}

FabricErrc ShmCore::Lookup(uint64_t key, uint64_t endpoint_id, ShmKey* out) {
  return keys_.With(key, endpoint_id, [out](const ShmKey& e) {
    *out = e;
    return FabricErrc::kOk_;
  });
}

}  // namespace rdmq::fabric::internal
