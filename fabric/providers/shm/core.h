// The shm provider's fabric state (docs/fabric.md, "shm"): the bootstrap listener on a Unix
// socket, and the key table with its key page.
//
// The key page is a memfd of 64-bit words, one per key (slot 0 stays zero), mapped read-only by
// every peer: a key's word holds the key while it is valid and 0 once revoked. A peer checks its
// key's word before each operation, which is how a revoked grant stops working for peers that
// already mapped the window. Threading: thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "fabric/fabric_core.h"
#include "fabric/key_table.h"
#include "fabric/posix.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal {

inline constexpr size_t kKeyPageSlots = size_t{1} << 17;
inline constexpr size_t kKeyPageBytes = kKeyPageSlots * sizeof(uint64_t);

// The fds of one region, shared by all its keys so that an fd stays open while the agent sends
// it.
struct RegionFds {
  UniqueFd rw;
  bool rw_is_read_only = false;  // `rw` was opened read-only: it is the read-only fd too
  // A read-only reopen of `rw`, made on first use (for keys without write or atomic rights).
  Result<int> ReadOnly() EXCLUDES(mu);

 private:
  Mutex mu;
  UniqueFd ro GUARDED_BY(mu);
};

// What a key grants: a window of a region file.
struct ShmKey {
  uint32_t slot = 0;  // the key's word in the key page
  std::shared_ptr<RegionFds> fds;
  uint64_t base = 0;         // owner address of the window's first byte
  uint64_t length = 0;       // window length
  uint64_t file_offset = 0;  // file offset of the window's first byte
  uint32_t access = 0;
  uint64_t scope = 0;  // 0: any peer; else the only endpoint id whose peer may attach
};

class ShmCore : public FabricCore {
 public:
  ShmCore() : FabricCore(Provider::kShm, "rdmq-shm") {}
  ~ShmCore();
  Status Init(const FabricOptions& o);

  // A read-only descriptor of the key page, for peers.
  int keypage_ro_fd() const noexcept { return keypage_ro_fd_.get(); }

  // Files a key for `k` (its slot is assigned here); kResourceExhausted when every slot is taken.
  Result<uint64_t> AddKey(ShmKey k) EXCLUDES(slots_mu_);
  void RevokeKey(uint64_t key) EXCLUDES(slots_mu_);
  // What `key` grants to the peer of endpoint `endpoint_id`, or the error its attach gets.
  FabricErrc Lookup(uint64_t key, uint64_t endpoint_id, ShmKey* out);

 private:
  std::atomic<uint64_t>* Slot(uint32_t slot) const noexcept {
    return reinterpret_cast<std::atomic<uint64_t>*>(keypage_.data() + size_t{slot} * sizeof(uint64_t));
  }

  std::string path_;  // Unix socket path, "" if not listening
  UniqueFd keypage_fd_;
  UniqueFd keypage_ro_fd_;
  Mapping keypage_;
  KeyTable<ShmKey> keys_;
  Mutex slots_mu_;  // taken inside the key table's lock when a key is revoked
  std::vector<uint32_t> free_slots_ GUARDED_BY(slots_mu_);
  uint32_t next_slot_ GUARDED_BY(slots_mu_) = 1;  // slot 0 stays zero
};

}  // namespace rdmq::fabric::internal
