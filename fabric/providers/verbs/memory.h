// Memory registration on the verbs provider: a region is an MR (its rkey is the descriptor's
// key); a descriptor with fewer rights is one more MR with those rights, so that the NIC
// enforces them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "device.h"
#include "fabric/region_base.h"
#include "rdmq/common/mutex.h"
#include "resources.h"

namespace rdmq::fabric::internal {

// The ibv access flags for fabric access bits (local write whenever anything may be written).
int ToIbvAccess(uint32_t access);

class VerbsRegion final : public LocalRegion {
 public:
  // `fd`: the file the memory maps (-1 for anonymous memory), named in registration errors.
  VerbsRegion(std::shared_ptr<VerbsCore> core, Mapping owned, std::byte* data, size_t size, uint32_t access,
              int fd)
      : LocalRegion(Provider::kVerbs, core->address, std::move(owned), data, size, access),
        core_(std::move(core)),
        fd_(fd) {}
  ~VerbsRegion() override { core_->RemoveRegion(data_); }
  VerbsRegion(const VerbsRegion&) = delete;
  VerbsRegion& operator=(const VerbsRegion&) = delete;
  // Registers the memory and enters the region in the registry. Call once.
  Status Init();

  RegionDescriptor Descriptor() const override { return Describe(mr_->rkey, 0, size_, access_); }
  Result<RegionDescriptor> Descriptor(uint32_t access) const override EXCLUDES(mu_);
  ibv_mr* mr() const noexcept { return mr_.get(); }
  VerbsCore* core() const noexcept { return core_.get(); }

 private:
  std::shared_ptr<VerbsCore> core_;
  int fd_;
  MrPtr mr_;
  mutable Mutex mu_;
  mutable std::map<uint32_t, MrPtr> extra_ GUARDED_BY(mu_);  // rights -> registration
};

}  // namespace rdmq::fabric::internal
