// SendFuture (producer.h): waits drive the producer's progress (Core::WaitFor) instead of
// sleeping on a condition that another thread would have to signal.
#include "producer/future.h"

#include "producer/core.h"

namespace rdmq::producer {

Result<RecordMetadata> SendFuture::get() const {
  if (!state_) return Status(Errc::kFailedPrecondition, "get() on an empty SendFuture");
  if (!state_->ready() && state_->core) {
    state_->core->WaitFor([&] { return state_->ready(); }, Clock::time_point::max());
  }
  if (!state_->status.ok()) return state_->status;
  return state_->Metadata(index_);
}

bool SendFuture::ready() const { return state_ && state_->ready(); }

bool SendFuture::wait_for(std::chrono::nanoseconds timeout) const {
  if (!state_) return false;
  if (ready()) return true;
  if (!state_->core) return false;
  return state_->core->WaitFor([&] { return state_->ready(); },
                               Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout));
}

}  // namespace rdmq::producer
