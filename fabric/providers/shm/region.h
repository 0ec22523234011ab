// The shm provider's regions and completion queues.
//
//   ShmRegion  local memory backed by a memfd or file; its keys name windows of that file.
//   ShmRemote  a peer's window, mapped here (read-only unless the key grants write or atomics).
//   ShmCq      a software completion queue whose doorbell lives in a memfd page, so that a peer
//              that fills a mailbox can ring it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core.h"
#include "fabric/posix.h"
#include "fabric/region_base.h"
#include "fabric/soft_cq.h"
#include "fabric/wire.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal {

class ShmCq : public SoftCq {
 public:
  static Result<std::unique_ptr<ShmCq>> Create(std::shared_ptr<ShmCore> core);
  // The doorbell page's memfd, for peers.
  int bell_fd() const noexcept { return fd_.get(); }

 private:
  ShmCq(std::shared_ptr<ShmCore> core, UniqueFd fd, Mapping m);
  std::shared_ptr<ShmCore> core_;
  UniqueFd fd_;
  Mapping map_;
};

class ShmRegion final : public KeyedRegion<ShmCore> {
 public:
  // [data, data+size) maps `fds->rw` from `file_offset` on.
  ShmRegion(std::shared_ptr<ShmCore> core, std::shared_ptr<RegionFds> fds, Mapping owned, std::byte* data,
            size_t size, uint64_t file_offset, uint32_t access)
      : KeyedRegion(std::move(core), Provider::kShm, std::move(owned), data, size, access),
        fds_(std::move(fds)),
        file_offset_(file_offset) {}

 private:
  Result<uint64_t> NewKey(uint64_t offset, uint64_t length, uint32_t access, uint64_t scope) const override;

  std::shared_ptr<RegionFds> fds_;
  uint64_t file_offset_;
};

class ShmRemote final : public AttachedRegion {
 public:
  // `ptr` is where the window starts inside `m`; `slot` the key's word in the owner's key page.
  ShmRemote(RegionDescriptor d, uint64_t endpoint_id, Mapping m, std::byte* ptr, const wire::AttachReply& rep,
            const std::atomic<uint64_t>* slot)
      : AttachedRegion(std::move(d), endpoint_id),
        map_(std::move(m)),
        ptr_(ptr),
        length_(rep.length),
        access_(rep.access),
        owner_base_(rep.base),
        slot_(slot) {}
  Status WaitWhileEqual(uint64_t offset, uint64_t expected, std::chrono::nanoseconds timeout) override;
  Status Wake(uint64_t offset) override;
  const std::byte* mapped() const noexcept override { return ptr_; }
  bool revoked() const noexcept override { return !Valid(); }

  // The key is still valid (not revoked by the owner).
  bool Valid() const noexcept { return slot_->load(std::memory_order_acquire) == descriptor().key; }
  // The rights, bounds and alignment check of an operation on [offset, offset+len) of the window.
  FabricErrc Check(Opcode op, uint64_t offset, uint64_t len) const noexcept {
    return CheckAccess(op, access_, length_, offset, len, owner_base_ + offset);
  }
  std::byte* at(uint64_t offset) const noexcept { return ptr_ + offset; }

 private:
  Mapping map_;
  std::byte* ptr_;
  uint64_t length_;
  uint32_t access_;
  uint64_t owner_base_;
  const std::atomic<uint64_t>* slot_;
};

}  // namespace rdmq::fabric::internal
