// What the providers' regions share.
//
//   LocalRegion     a registered range of local memory: the memory it covers (and owns, for
//                   Allocate), its rights, futex wait/wake on its words, descriptors of part of it.
//   KeyedRegion     a LocalRegion whose descriptors are keys in its fabric's key table (shm, tcp);
//                   KeyGrant is a grant made of such a key.
//   AttachedRegion  a peer's region attached to an endpoint: its descriptor and that endpoint;
//                   UnmappedRemote is the whole of it on tcp and verbs.
//
// Threading: regions are immutable after Init except for the keys made on demand, which a mutex
// guards; every method is thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "checks.h"
#include "posix.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal {

class LocalRegion : public Region {
 public:
  // `owned` is the mapping the region owns (empty for Register); [data, data+size) the memory.
  LocalRegion(Provider provider, std::string node, Mapping owned, std::byte* data, size_t size,
              uint32_t access)
      : owned_(std::move(owned)),
        data_(data),
        size_(size),
        access_(access),
        provider_(provider),
        node_(std::move(node)) {}

  std::byte* data() const noexcept final { return data_; }
  size_t size() const noexcept final { return size_; }
  uint32_t access() const noexcept final { return access_; }
  void Wake(uint64_t offset) noexcept final;
  Status WaitWhileEqual(uint64_t offset, uint64_t expected, std::chrono::nanoseconds timeout) final;
  // A descriptor for [offset, offset+length) under `key` with `access`.
  RegionDescriptor Describe(uint64_t key, uint64_t offset, uint64_t length, uint32_t access) const;

 protected:
  // kAccessDenied unless `access` is within the registration's rights.
  Status CheckSubset(uint32_t access) const;

  Mapping owned_;
  std::byte* data_;
  size_t size_;
  uint32_t access_;

 private:
  Provider provider_;
  std::string node_;
};

// A grant enforced by a key table in the owner's fabric core (shm, tcp): tcp's agent checks the
// key on every operation; shm peers check the key's shared slot before every operation (and the
// owner at attach), so revoking is dropping the key.
template <class Core>
class KeyGrant final : public Grant {
 public:
  KeyGrant(std::shared_ptr<Core> core, RegionDescriptor d) : core_(std::move(core)), desc_(std::move(d)) {}
  ~KeyGrant() override { (void)Revoke(); }
  const RegionDescriptor& descriptor() const noexcept override { return desc_; }
  Status Revoke() override {
    core_->RevokeKey(desc_.key);
    return Status::Ok();
  }

 private:
  std::shared_ptr<Core> core_;
  RegionDescriptor desc_;
};

// A region whose descriptors are keys that its fabric core (`Core`: RevokeKey, address) checks:
// one key for the registration's rights, one per lesser set of rights asked for (made on first
// use), one per grant. Destroying the region revokes its keys (its grants revoke their own).
template <class Core>
class KeyedRegion : public LocalRegion {
 public:
  KeyedRegion(std::shared_ptr<Core> core, Provider provider, Mapping owned, std::byte* data, size_t size,
              uint32_t access)
      : LocalRegion(provider, core->address, std::move(owned), data, size, access), core_(std::move(core)) {}
  ~KeyedRegion() override {
    MutexLock l(mu_);
    for (const auto& [rights, key] : keys_) core_->RevokeKey(key);
  }
  KeyedRegion(const KeyedRegion&) = delete;
  KeyedRegion& operator=(const KeyedRegion&) = delete;

  // Makes the key for the whole region. Call once, before the region is shared.
  Status Init() EXCLUDES(mu_) {
    RDMQ_ASSIGN_OR_RETURN(main_key_, NewKey(0, size_, access_, 0));
    MutexLock l(mu_);
    keys_.emplace(access_, main_key_);
    return Status::Ok();
  }
  RegionDescriptor Descriptor() const override { return Describe(main_key_, 0, size_, access_); }
  Result<RegionDescriptor> Descriptor(uint32_t access) const override EXCLUDES(mu_) {
    RDMQ_RETURN_IF_ERROR(CheckSubset(access));
    MutexLock l(mu_);
    auto it = keys_.find(access);
    if (it == keys_.end()) {
      RDMQ_ASSIGN_OR_RETURN(uint64_t key, NewKey(0, size_, access, 0));
      it = keys_.emplace(access, key).first;
    }
    return Describe(it->second, 0, size_, access);
  }
  // A grant of [offset, offset+length) with `access` that only endpoint `scope`'s peer may use
  // (the caller checked the arguments with CheckGrant).
  Result<std::unique_ptr<Grant>> GrantTo(uint64_t scope, uint64_t offset, uint64_t length, uint32_t access) {
    RDMQ_ASSIGN_OR_RETURN(uint64_t key, NewKey(offset, length, access, scope));
    return std::unique_ptr<Grant>(new KeyGrant<Core>(core_, Describe(key, offset, length, access)));
  }
  Core* core() const noexcept { return core_.get(); }

 protected:
  // Files a key for [offset, offset+length) of the region with `access`, usable on the
  // connection of endpoint `scope` only (0: any). The key table is the provider's.
  virtual Result<uint64_t> NewKey(uint64_t offset, uint64_t length, uint32_t access,
                                  uint64_t scope) const = 0;

  const std::shared_ptr<Core> core_;

 private:
  uint64_t main_key_ = 0;
  mutable Mutex mu_;
  mutable std::map<uint32_t, uint64_t> keys_ GUARDED_BY(mu_);  // rights -> whole-region key
};

// `region` as the provider's region type `R`, registered with the fabric core `core`, after
// CheckGrant: the common start of Endpoint::GrantAccess.
template <class R, class Core>
Result<R*> GrantableRegion(Region& region, const Core* core, uint64_t offset, uint64_t length,
                           uint32_t access, const char* provider) {
  auto* r = dynamic_cast<R*>(&region);
  if (r == nullptr || r->core() != core) {
    return Status(Errc::kInvalidArgument,
                  std::string("GrantAccess: the region is not registered with this ") + provider + " fabric");
  }
  RDMQ_RETURN_IF_ERROR(CheckGrant(*r, offset, length, access));
  return r;
}

// Endpoint::GrantAccess on the key-table providers (shm, tcp): a key for the window of `region`
// (an `R` of fabric core `core`) that only endpoint `endpoint_id`'s peer may use.
template <class R, class Core>
Result<std::unique_ptr<Grant>> GrantKey(Region& region, const Core* core, uint64_t endpoint_id,
                                        uint64_t offset, uint64_t length, uint32_t access,
                                        const char* provider) {
  RDMQ_ASSIGN_OR_RETURN(R * r, GrantableRegion<R>(region, core, offset, length, access, provider));
  return r->GrantTo(endpoint_id, offset, length, access);
}

// A peer's region attached to an endpoint: the descriptor and the endpoint that attached it
// (work requests may target it on that endpoint only).
class AttachedRegion : public RemoteRegion {
 public:
  AttachedRegion(RegionDescriptor d, uint64_t endpoint_id) : desc_(std::move(d)), endpoint_id_(endpoint_id) {}
  const RegionDescriptor& descriptor() const noexcept final { return desc_; }
  uint64_t endpoint_id() const noexcept { return endpoint_id_; }

 private:
  RegionDescriptor desc_;
  uint64_t endpoint_id_;
};

// tcp and verbs: nothing of the peer's region is mapped here; waiting on and waking its words is
// unsupported (the owner notifies with a SEND or WRITE_WITH_IMM).
class UnmappedRemote final : public AttachedRegion {
 public:
  using AttachedRegion::AttachedRegion;
  Status WaitWhileEqual(uint64_t offset, uint64_t expected, std::chrono::nanoseconds timeout) override;
  Status Wake(uint64_t offset) override;
  const std::byte* mapped() const noexcept override { return nullptr; }
};

}  // namespace rdmq::fabric::internal
