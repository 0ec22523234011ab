// The thread combining queue (TCQ) of FLOCK synchronization (section 3.3.2): an MCS-style queue
// of threads that want to use one channel. The thread that finds the queue empty leads: it
// gathers the requests of the followers queued behind it (a bounded number), sends them as one
// message, and then hands leadership to the first follower it left out. Followers wait on their
// own node (no shared cache line is spun on).
//
// Usage (every thread, with a Node on its stack):
//   if (!q.Enqueue(&node)) {
//     switch (node.state.WaitWhile(kWaiting, deadline, spins)) {   // a follower
//       case kServed: ...  // the leader sent my request
//       case kLeader: ...  // I lead now: fall through to leading
//       case kRetry: ...   // the leader could not send (e.g. channel deactivated): start over
//     }
//   }
//   // leading:
//   Node* batch[kMax]; size_t n = q.Gather(&node, kMax, accept, batch);   // batch[0] == &node
//   ... send batch ...
//   q.Finish(batch, n, kServed);   // hands over, then releases the followers in batch[1..n)
//
// Threading: Enqueue from any thread; Gather/Finish only by the current leader. Node memory must
// stay valid until the node's state leaves kWaiting (or, for the leader, until Finish returns).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

#include "rdmq/rpc/wait.h"

namespace rdmq::rpc {

class CombiningQueue {
 public:
  enum State : uint32_t { kWaiting = 0, kLeader = 1, kServed = 2, kRetry = 3, kFailed = 4 };

  struct Node {
    std::atomic<Node*> next{nullptr};
    Signal state{kWaiting};
    void* item = nullptr;  // what the leader combines; opaque to the queue
  };

  // Appends `n` (state kWaiting, next null). True when `n` is at the head: its thread leads now.
  bool Enqueue(Node* n) noexcept {
    n->next.store(nullptr, std::memory_order_relaxed);
    n->state.Reset(kWaiting);
    Node* prev = tail_.exchange(n, std::memory_order_acq_rel);
    if (prev == nullptr) return true;
    prev->next.store(n, std::memory_order_release);
    return false;
  }

  // Leader only: `out[0] = leader`, then the followers already linked behind it, in order, while
  // fewer than `max` are taken and `accept(node)` says the node's item still fits. Never waits
  // for a follower that has not linked itself yet. Returns the number in `out`.
  template <class Accept>
  size_t Gather(Node* leader, size_t max, Accept&& accept, Node** out) {
    size_t n = 0;
    out[n++] = leader;
    Node* cur = leader;
    while (n < max) {
      Node* nxt = cur->next.load(std::memory_order_acquire);
      if (nxt == nullptr || !accept(nxt)) break;
      out[n++] = nxt;
      cur = nxt;
    }
    return n;
  }

  // Leader only: ends the turn. Finds the first node after the batch (waiting for it to link if
  // it has already swapped the tail) and makes it leader, then gives every follower in
  // batch[1..n) the state `outcome`. The leader's own node is not touched.
  void Finish(Node* const* batch, size_t n, uint32_t outcome) noexcept {
    Node* last = batch[n - 1];
    Node* successor = last->next.load(std::memory_order_acquire);
    if (successor == nullptr) {
      Node* expected = last;
      if (!tail_.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel)) {
        // Someone swapped the tail but has not linked yet: it will in a few instructions.
        for (int spins = 0; (successor = last->next.load(std::memory_order_acquire)) == nullptr; ++spins) {
          if (spins < 1000) {
            CpuRelax();
          } else {
            std::this_thread::yield();  // it was preempted between its two steps
          }
        }
      }
    }
    // Every next pointer this leader needs has been read: the batch nodes may go now.
    if (successor != nullptr) successor->state.Set(kLeader);
    for (size_t i = 1; i < n; ++i) batch[i]->state.Set(outcome);
  }

  bool empty() const noexcept { return tail_.load(std::memory_order_acquire) == nullptr; }

 private:
  alignas(64) std::atomic<Node*> tail_{nullptr};
};

}  // namespace rdmq::rpc
