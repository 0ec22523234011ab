// The key table of a fabric whose owner side checks keys in software (shm, tcp): random 64-bit
// keys mapped to what they grant. A key is never reused, so an operation with a revoked key is
// told kRevoked rather than reaching a newer window.
//
// `Entry` has a `uint64_t scope` member: 0 when any connection may use the key, else the id of
// the only endpoint whose peer may. Threading: thread-safe; the callbacks run under the table's
// lock (they must not call back into the table).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "posix.h"
#include "rdmq/common/mutex.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal {

template <class Entry>
class KeyTable {
 public:
  // Files `entry` under a fresh key (random, non-zero, never used before in this table) and
  // returns it. `publish(key, entry)` runs first, in the same critical section.
  template <class F>
  uint64_t Add(Entry entry, F&& publish) EXCLUDES(mu_) {
    MutexLock l(mu_);
    uint64_t key;
    do {
      key = RandomKey();
    } while (keys_.count(key) != 0 || revoked_.count(key) != 0);
    publish(key, entry);
    keys_.emplace(key, std::move(entry));
    return key;
  }
  uint64_t Add(Entry entry) {
    return Add(std::move(entry), [](uint64_t, const Entry&) {});
  }

  // Drops `key` (nothing if it is not live); `retire(entry)` runs in the same critical section.
  template <class F>
  void Revoke(uint64_t key, F&& retire) EXCLUDES(mu_) {
    MutexLock l(mu_);
    auto it = keys_.find(key);
    if (it == keys_.end()) return;
    retire(it->second);
    keys_.erase(it);
    revoked_.insert(key);
  }
  void Revoke(uint64_t key) {
    Revoke(key, [](const Entry&) {});
  }

  // Runs `use(entry)` (returning a FabricErrc) under the table's lock, so that what the entry
  // names cannot be revoked meanwhile, if `key` is live and the connection of endpoint
  // `endpoint_id` may use it; kRevoked or kBadKey otherwise.
  template <class F>
  FabricErrc With(uint64_t key, uint64_t endpoint_id, F&& use) EXCLUDES(mu_) {
    MutexLock l(mu_);
    auto it = keys_.find(key);
    if (it == keys_.end()) return revoked_.count(key) != 0 ? FabricErrc::kRevoked : FabricErrc::kBadKey;
    if (it->second.scope != 0 && it->second.scope != endpoint_id) return FabricErrc::kBadKey;
    return use(it->second);
  }

 private:
  Mutex mu_;
  std::unordered_map<uint64_t, Entry> keys_ GUARDED_BY(mu_);
  std::unordered_set<uint64_t> revoked_ GUARDED_BY(mu_);
};

}  // namespace rdmq::fabric::internal
