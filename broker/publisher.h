// Publisher: tells readers that a partition's slot changed (new commits, a roll, retention, the
// log closed): wakes consumers sleeping on the slot's futex (shm) and sends a notification to
// every Watch registered for an older generation.
//
// Threading: Publish runs under the partition's lock; notification buffers are handed out from
// a ring of staging slots by an atomic cursor, so any number of threads may publish at once.
#pragma once

#include <atomic>
#include <cstdint>

#include "counters.h"
#include "partition.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::broker::internal {

class Publisher {
 public:
  // Notifications are staged in `staging` from byte `offset`, in `slots` buffers of 32 bytes.
  Publisher(fabric::Provider provider, fabric::Region* staging, uint64_t offset, uint32_t slots,
            Counters& counters)
      : wake_slot_(provider == fabric::Provider::kShm),
        staging_(staging),
        offset_(offset),
        slots_(slots),
        n_(counters) {}

  void Publish(Partition& p) REQUIRES(p.mu);

  static constexpr uint64_t kNotificationBytes = 32;

 private:
  const bool wake_slot_;
  fabric::Region* const staging_;
  const uint64_t offset_;
  const uint32_t slots_;
  Counters& n_;
  std::atomic<uint32_t> cursor_{0};
};

}  // namespace rdmq::broker::internal
