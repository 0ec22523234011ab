#include "memory.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <cerrno>
#include <cstdio>
#include <mutex>
#include <string>
#include <system_error>

#include "rdmq/common/log.h"

namespace rdmq::fabric::internal {

namespace {
// What memory `fd` is (for registration errors): the backing decides whether pinning works.
std::string BackingName(int fd) {
  if (fd < 0) return "anonymous memory";
  struct statfs sf;
  if (::fstatfs(fd, &sf) != 0) return "unknown backing";
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode)) return "a character device (devdax?)";
  switch (static_cast<unsigned long>(sf.f_type)) {
    case TMPFS_MAGIC:
      return "tmpfs/memfd";
    case HUGETLBFS_MAGIC:
      return "hugetlbfs";
    default: {
      char b[32];
      std::snprintf(b, sizeof b, "%lx", static_cast<unsigned long>(sf.f_type));
      return "a page-cache file (filesystem type 0x" + std::string(b) + ", possibly fsdax)";
    }
  }
}
}  // namespace

int ToIbvAccess(uint32_t a) {
  // Local write is needed for READ targets, receives and any remote write or atomic; a region
  // registered for remote reads only gets none, so read-only mappings (sealed log segments,
  // which the storage engine maps PROT_READ) can be registered too.
  int f = (a & (kLocalWrite | kRemoteWrite | kRemoteAtomic)) != 0 ? IBV_ACCESS_LOCAL_WRITE : 0;
  if (a & kRemoteRead) f |= IBV_ACCESS_REMOTE_READ;
  if (a & kRemoteWrite) f |= IBV_ACCESS_REMOTE_WRITE;
  if (a & kRemoteAtomic) f |= IBV_ACCESS_REMOTE_ATOMIC;
  return f;
}

Result<MrPtr> VerbsCore::RegisterMr(void* addr, size_t len, uint32_t access, int fd, bool window) {
  const bool writable = (access & (kLocalWrite | kRemoteWrite | kRemoteAtomic)) != 0;
  const int flags = ToIbvAccess(access) | (has_mw && (writable || window) ? IBV_ACCESS_MW_BIND : 0);
  MrPtr mr(ibv_reg_mr(pd.get(), addr, len, flags));
  if (mr) return mr;
  const int err1 = errno;
  mr.reset(ibv_reg_mr(pd.get(), addr, len, flags | IBV_ACCESS_ON_DEMAND));
  if (mr) {
    RDMQ_LOG(kInfo, "fabric", "registered with on-demand paging").kv("bytes", len).kv("device", device_name);
    return mr;
  }
  const int err2 = errno;
  return Status(
      FabricErrc::kRegistration,
      "ibv_reg_mr of " + std::to_string(len) + " bytes of " + BackingName(fd) + " on " + device_name +
          " failed (" + std::system_category().message(err1) +
          "; with on-demand paging: " + std::system_category().message(err2) +
          "). Back the region with memfd/tmpfs, hugetlbfs or devdax (/dev/daxX.Y) instead of fsdax or "
          "page-cache files, or use a NIC with on-demand paging");
}

void VerbsCore::AddRegion(VerbsRegion* r, std::byte* addr, size_t len) {
  std::unique_lock lk(regions_mu_);
  regions_[addr] = {r, len};
}

void VerbsCore::RemoveRegion(std::byte* addr) {
  std::unique_lock lk(regions_mu_);
  regions_.erase(addr);
}

VerbsRegion* VerbsCore::FindRegion(const void* p, size_t len) {
  std::shared_lock lk(regions_mu_);
  auto it = regions_.upper_bound(static_cast<std::byte*>(const_cast<void*>(p)));
  if (it == regions_.begin()) return nullptr;
  --it;
  const auto* b = static_cast<const std::byte*>(p);
  if (b + len <= it->first + it->second.second) return it->second.first;
  return nullptr;
}

Status VerbsRegion::Init() {
  RDMQ_ASSIGN_OR_RETURN(mr_, core_->RegisterMr(data_, size_, access_, fd_));
  core_->AddRegion(this, data_, size_);
  return Status::Ok();
}

Result<RegionDescriptor> VerbsRegion::Descriptor(uint32_t access) const {
  RDMQ_RETURN_IF_ERROR(CheckSubset(access));
  if (access == access_) return Descriptor();
  // Fewer rights need their own registration: the rkey is what the NIC enforces.
  MutexLock l(mu_);
  auto it = extra_.find(access);
  if (it == extra_.end()) {
    RDMQ_ASSIGN_OR_RETURN(MrPtr mr, core_->RegisterMr(data_, size_, access, fd_));
    it = extra_.emplace(access, std::move(mr)).first;
  }
  return Describe(it->second->rkey, 0, size_, access);
}

}  // namespace rdmq::fabric::internal
