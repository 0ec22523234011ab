// The thread combining queue: leadership, bounded batches, hand-over to the first follower left
// out, and exactly-once service under real concurrency.
#include "rpc/combining_queue.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace rdmq::rpc {
namespace {

using Node = CombiningQueue::Node;

TEST_CASE("TCQ: the first thread leads, the batch is bounded, the first left out leads next", "[rpc][tcq]") {
  CombiningQueue q;
  Node a, b, c, d;
  CHECK(q.Enqueue(&a));
  CHECK_FALSE(q.Enqueue(&b));
  CHECK_FALSE(q.Enqueue(&c));
  CHECK_FALSE(q.Enqueue(&d));
  Node* batch[8];
  const size_t n = q.Gather(
      &a, 3, [](Node*) { return true; }, batch);
  REQUIRE(n == 3);
  CHECK(batch[0] == &a);
  CHECK(batch[1] == &b);
  CHECK(batch[2] == &c);
  q.Finish(batch, n, CombiningQueue::kServed);
  CHECK(b.state.load() == CombiningQueue::kServed);
  CHECK(c.state.load() == CombiningQueue::kServed);
  CHECK(d.state.load() == CombiningQueue::kLeader);
  // d leads alone and leaves the queue empty.
  const size_t m = q.Gather(
      &d, 3, [](Node*) { return true; }, batch);
  CHECK(m == 1);
  q.Finish(batch, m, CombiningQueue::kServed);
  CHECK(q.empty());
  // The next thread to come leads at once.
  Node e;
  CHECK(q.Enqueue(&e));
}

TEST_CASE("TCQ: a follower whose request does not fit ends the batch and leads next", "[rpc][tcq]") {
  CombiningQueue q;
  Node a, b, c;
  int sa = 10, sb = 50, sc = 10;
  a.item = &sa;
  b.item = &sb;
  c.item = &sc;
  REQUIRE(q.Enqueue(&a));
  REQUIRE_FALSE(q.Enqueue(&b));
  REQUIRE_FALSE(q.Enqueue(&c));
  int room = 40 - sa;
  Node* batch[8];
  const size_t n = q.Gather(
      &a, 8,
      [&](Node* x) {
        const int s = *static_cast<int*>(x->item);
        if (s > room) return false;
        room -= s;
        return true;
      },
      batch);
  CHECK(n == 1);
  q.Finish(batch, n, CombiningQueue::kServed);
  CHECK(b.state.load() == CombiningQueue::kLeader);
  CHECK(c.state.load() == CombiningQueue::kWaiting);
}

TEST_CASE("TCQ: retry outcome goes to the whole batch", "[rpc][tcq]") {
  CombiningQueue q;
  Node a, b;
  REQUIRE(q.Enqueue(&a));
  REQUIRE_FALSE(q.Enqueue(&b));
  Node* batch[4];
  const size_t n = q.Gather(
      &a, 4, [](Node*) { return true; }, batch);
  q.Finish(batch, n, CombiningQueue::kRetry);
  CHECK(b.state.load() == CombiningQueue::kRetry);
  CHECK(q.empty());
}

TEST_CASE("TCQ under contention: every item served exactly once, one leader at a time", "[rpc][tcq]") {
  const int threads = 8;
  const int per_thread = test::Trials(20000, 1000);
  const size_t max_batch = 5;
  CombiningQueue q;
  std::atomic<int> leaders{0};
  std::atomic<bool> overlap{false};
  std::atomic<bool> bad_state{false};
  std::vector<int> served;  // only the leader appends
  served.reserve(static_cast<size_t>(threads * per_thread));
  std::atomic<uint64_t> batches{0}, batch_items{0};
  std::atomic<size_t> largest{0};

  auto lead = [&](Node* me) {
    if (leaders.fetch_add(1) != 0) overlap = true;
    Node* batch[max_batch];
    const size_t n = q.Gather(
        me, max_batch, [](Node*) { return true; }, batch);
    for (size_t i = 0; i < n; ++i) served.push_back(*static_cast<int*>(batch[i]->item));
    batches.fetch_add(1);
    batch_items.fetch_add(n);
    size_t l = largest.load();
    while (n > l && !largest.compare_exchange_weak(l, n)) {
    }
    leaders.fetch_sub(1);
    q.Finish(batch, n, CombiningQueue::kServed);
  };

  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      EventCount park;
      for (int i = 0; i < per_thread; ++i) {
        int item = t * per_thread + i;
        Node node;
        node.item = &item;
        node.park = &park;
        if (q.Enqueue(&node)) {
          lead(&node);
          continue;
        }
        uint32_t s;
        for (;;) {
          const uint32_t seen = park.Read();
          s = node.state.load(std::memory_order_acquire);
          if (s != CombiningQueue::kWaiting) break;
          park.Wait(seen, std::chrono::milliseconds(100));
        }
        if (s == CombiningQueue::kLeader) {
          lead(&node);
        } else if (s != CombiningQueue::kServed) {
          bad_state = true;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  CHECK_FALSE(overlap.load());
  CHECK_FALSE(bad_state.load());
  REQUIRE(served.size() == static_cast<size_t>(threads * per_thread));
  std::vector<bool> seen(served.size(), false);
  for (int v : served) {
    REQUIRE(v >= 0);
    REQUIRE(static_cast<size_t>(v) < seen.size());
    REQUIRE_FALSE(seen[static_cast<size_t>(v)]);
    seen[static_cast<size_t>(v)] = true;
  }
  CHECK(largest.load() <= max_batch);
  CHECK(q.empty());
  INFO("mean coalescing degree " << static_cast<double>(batch_items.load()) /
                                        static_cast<double>(batches.load()));
  CHECK(batch_items.load() == served.size());
  // Each thread's own items were served in its program order (a thread never has two queued).
  std::vector<int> last(threads, -1);
  for (int v : served) {
    const int t = v / per_thread;
    REQUIRE(v > last[static_cast<size_t>(t)]);
    last[static_cast<size_t>(t)] = v;
  }
}

}  // namespace
}  // namespace rdmq::rpc
