// The thread combining queue (TCQ) of FLOCK synchronization (section 3.3.2): an MCS-style queue
// of threads that want to use one channel. The thread that finds the queue empty leads: it
// gathers the requests of the followers queued behind it (a bounded number), sends them as one
// message, and then hands leadership to the first follower it left out. Followers wait on their
// own node (no shared cache line is spun on).
//
// Usage (every thread, with a Node on its stack and an EventCount it sleeps on):
//   node.park = &my_park;
//   if (!q.Enqueue(&node)) {
//     // a follower: wait (spin, then my_park.Wait) while node.state == kWaiting
//     switch (node.state) {
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
// Every state change is followed by park->Notify(), except kServed for a node marked
// quiet_served: a synchronous caller whose request is on its way has nothing to do until its
// response arrives, so it sleeps on through (its response wakes it), saving two context
// switches per call when threads outnumber cores.
//
// Threading: Enqueue from any thread; Gather/Finish only by the current leader. Node memory must
// stay valid until the node's state leaves kWaiting (or, for the leader, until Finish returns);
// the EventCount must outlive every Finish that may notify it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

#include "rpc/wait.h"

namespace rdmq::rpc {

class CombiningQueue {
 public:
  enum State : uint32_t { kWaiting = 0, kLeader = 1, kServed = 2, kRetry = 3, kFailed = 4 };

  struct Node {
    std::atomic<Node*> next{nullptr};
    std::atomic<uint32_t> state{kWaiting};
    EventCount* park = nullptr;  // notified when the state changes (may be null: spin)
    bool quiet_served = false;   // kServed without a notification
    void* item = nullptr;        // what the leader combines; opaque to the queue
  };

  // Appends `n` (state kWaiting, next null). True when `n` is at the head: its thread leads now.
  bool Enqueue(Node* n) noexcept {
    n->next.store(nullptr, std::memory_order_relaxed);
    n->state.store(kWaiting, std::memory_order_relaxed);
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
    // Every next pointer this leader needs has been read: the batch nodes may go now. A node
    // may vanish the moment its state changes, so what is needed from it is read first.
    if (successor != nullptr) SetState(successor, kLeader);
    for (size_t i = 1; i < n; ++i) SetState(batch[i], outcome);
  }

  static void SetState(Node* node, uint32_t s) noexcept {
    EventCount* park = node->park;
    const bool quiet = s == kServed && node->quiet_served;
    node->state.store(s, std::memory_order_release);
    if (park != nullptr && !quiet) park->Notify();
  }

  bool empty() const noexcept { return tail_.load(std::memory_order_acquire) == nullptr; }

 private:
  alignas(64) std::atomic<Node*> tail_{nullptr};
};

}  // namespace rdmq::rpc
