// The tcp provider's fabric state (docs/fabric.md, "tcp"): the bootstrap listener and the key
// table the agent checks every request against; its regions and completion queues.
//
// Threading: thread-safe. WithKey runs on the agent thread, under the key table's lock, so that
// a region cannot be deregistered while a request copies into or out of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "fabric/checks.h"
#include "fabric/fabric_core.h"
#include "fabric/key_table.h"
#include "fabric/region_base.h"
#include "fabric/soft_cq.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal {

// What a key grants: a window of registered memory.
struct TcpKey {
  std::byte* base = nullptr;  // first byte of the window
  uint64_t length = 0;
  uint32_t access = 0;
  uint64_t scope = 0;  // 0: any connection; else the endpoint id that may use it
};

class TcpCore : public FabricCore {
 public:
  TcpCore() : FabricCore(Provider::kTcp, "rdmq-tcp") {}
  ~TcpCore() { agent.Stop(); }
  Status Init(const FabricOptions& o);

  uint64_t AddKey(const TcpKey& k) { return keys_.Add(k); }
  void RevokeKey(uint64_t key) { keys_.Revoke(key); }

  // Runs `apply(target)` on the first byte of [offset, offset+len) of the key's window under
  // the key table's lock, after the access check; returns the check's verdict.
  template <class F>
  FabricErrc WithKey(uint64_t key, uint64_t endpoint_id, Opcode op, uint64_t offset, uint64_t len,
                     F&& apply) {
    return keys_.With(key, endpoint_id, [&](const TcpKey& k) {
      const FabricErrc e =
          CheckAccess(op, k.access, k.length, offset, len, reinterpret_cast<uint64_t>(k.base) + offset);
      if (e == FabricErrc::kOk_) apply(k.base + offset);
      return e;
    });
  }

 private:
  KeyTable<TcpKey> keys_;
};

class TcpCq final : public SoftCq {
 public:
  explicit TcpCq(std::shared_ptr<TcpCore> core) : SoftCq(&bell_), core_(std::move(core)) {}

 private:
  Bell bell_;
  std::shared_ptr<TcpCore> core_;
};

class TcpRegion final : public KeyedRegion<TcpCore> {
 public:
  // The fd is not needed: the agent copies to and from the memory.
  TcpRegion(std::shared_ptr<TcpCore> core, Mapping owned, std::byte* data, size_t size, uint32_t access,
            int /*fd*/)
      : KeyedRegion(std::move(core), Provider::kTcp, std::move(owned), data, size, access) {}

 private:
  Result<uint64_t> NewKey(uint64_t offset, uint64_t length, uint32_t access, uint64_t scope) const override {
    return core_->AddKey({data_ + offset, length, access, scope});
  }
};

}  // namespace rdmq::fabric::internal
