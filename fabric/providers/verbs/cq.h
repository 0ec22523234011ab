// The verbs provider's completion queues: an ibv_cq with a completion channel (Wait sleeps on it)
// and a stash of software completions (operations refused before reaching the NIC, flushes, and
// hardware completions polled by a thread that waited for one of the provider's own operations),
// signalled through an eventfd. Each work completion is turned into a Completion by the endpoint
// its QP belongs to (cq.cc holds those handlers too).
//
// Threading: Poll and Wait by one thread at a time (the CompletionQueue contract); PushSoft,
// Progress, AddEndpoint and RemoveEndpoint from any thread.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <unordered_map>

#include "device.h"
#include "fabric/posix.h"
#include "rdmq/common/mutex.h"
#include "rdmq/fabric/fabric.h"
#include "resources.h"

namespace rdmq::fabric::internal {

class VerbsEpCore;

// The wr_id bit that marks a receive.
inline constexpr uint64_t kRecvBit = 1ULL << 63;

// `op` is the operation the completion is for (kRecv for receives): a message that does not fit
// its receive buffer shows up as a local QP operation or length error at the receiver and as a
// remote operation or invalid-request error at the sender (rdma_rxe and RNICs differ).
FabricErrc MapWcStatus(ibv_wc_status s, bool peer_gone, Opcode op);

class VerbsCq final : public CompletionQueue {
 public:
  static Result<std::unique_ptr<VerbsCq>> Create(std::shared_ptr<VerbsCore> core, size_t depth);
  ~VerbsCq() override;

  ibv_cq* cq() const noexcept { return cq_.get(); }

  void AddEndpoint(uint32_t qp_num, std::shared_ptr<VerbsEpCore> ep) EXCLUDES(mu_);
  void RemoveEndpoint(uint32_t qp_num) EXCLUDES(mu_);

  // Software completions (operations refused before reaching the NIC, flushes).
  void PushSoft(const Completion& c) EXCLUDES(mu_);

  size_t Poll(std::span<Completion> out) override EXCLUDES(mu_);
  // Processes hardware completions without returning them (they wait in the stash): used by a
  // thread that waits for one of the provider's own operations.
  void Progress() EXCLUDES(mu_);
  Status Wait(std::chrono::nanoseconds timeout) override EXCLUDES(mu_);

 private:
  explicit VerbsCq(std::shared_ptr<VerbsCore> core) : core_(std::move(core)) {}
  // Hands a work completion to its endpoint; false when it produces no Completion.
  bool Translate(const ibv_wc& wc, Completion* out) REQUIRES(mu_);
  // Translates hardware completions into out[n...] until `out` is full (or, `until_empty`, until
  // the CQ is empty; what does not fit goes to the stash). Returns the new n.
  size_t PollHardware(std::span<Completion> out, size_t n, bool until_empty) REQUIRES(mu_);
  // Moves every hardware completion there is into the stash; true if any came.
  bool StashHardware() REQUIRES(mu_);
  void Signal() noexcept;

  std::shared_ptr<VerbsCore> core_;
  CompChannelPtr channel_;
  CqPtr cq_;
  UniqueFd event_fd_;
  unsigned unacked_ = 0;  // Wait's thread only
  Mutex mu_;
  std::deque<Completion> stash_ GUARDED_BY(mu_);
  std::unordered_map<uint32_t, std::shared_ptr<VerbsEpCore>> eps_ GUARDED_BY(mu_);
};

}  // namespace rdmq::fabric::internal
