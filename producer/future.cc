// SendFuture (producer.h): waits drive the producer's progress (Core::WaitFor) instead of
// sleeping on a condition that another thread would have to signal.
#include "producer/future.h"

#include <utility>

#include "producer/core.h"

namespace rdmq::producer {

SendFuture::SendFuture(const SendFuture& other) noexcept : state_(other.state_), index_(other.index_) {
  if (state_ != nullptr) state_->refs.fetch_add(1, std::memory_order_relaxed);
}

SendFuture& SendFuture::operator=(const SendFuture& other) noexcept {
  if (this == &other) return *this;
  if (other.state_ != nullptr) other.state_->refs.fetch_add(1, std::memory_order_relaxed);
  if (state_ != nullptr) state_->Unref(1);
  state_ = other.state_;
  index_ = other.index_;
  return *this;
}

SendFuture& SendFuture::operator=(SendFuture&& other) noexcept {
  if (this != &other) {
    if (state_ != nullptr) state_->Unref(1);
    state_ = std::exchange(other.state_, nullptr);
    index_ = other.index_;
  }
  return *this;
}

SendFuture::~SendFuture() {
  if (state_ != nullptr) state_->Unref(1);
}

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
