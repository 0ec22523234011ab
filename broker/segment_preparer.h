// SegmentPreparer: the thread that makes each written partition's next segment ahead of its roll
// (storage's PartitionLog::PrepareSpare): a zeroed, allocated file with its pages in the page
// cache. Without it the roll allocates the file while commits wait (18-26 ms for 64 MiB on
// tmpfs), and the new segment's first writes fault in fresh pages on the producer's sending
// thread (docs/benchmarks.md, "Where the ack tail comes from"). The commit poller and the
// housekeeper offer a partition after its commits; Partition::WantsSpare decides (once per
// active segment), and the work runs without the partition's lock.
//
// Threading: MaybeWant from any thread; the work on the preparer's own thread (Start); Stop joins it.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>

#include "counters.h"
#include "partition.h"
#include "rdmq/common/mutex.h"

namespace rdmq::broker::internal {

class SegmentPreparer {
 public:
  explicit SegmentPreparer(Counters& counters) : n_(counters) {}
  ~SegmentPreparer() { Stop(); }
  SegmentPreparer(const SegmentPreparer&) = delete;
  SegmentPreparer& operator=(const SegmentPreparer&) = delete;

  void Start();
  void Stop();
  // Asks for `p`'s next segment if Partition::WantsSpare says so (once per active segment).
  void MaybeWant(Partition& p) REQUIRES(p.mu);

 private:
  void Loop();

  Counters& n_;
  Mutex mu_;
  CondVar cv_;
  std::deque<std::weak_ptr<Partition>> queue_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace rdmq::broker::internal
