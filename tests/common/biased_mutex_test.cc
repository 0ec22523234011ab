// rdmq::BiasedMutex: exclusion between the bias owner's fast path and other threads' revocations,
// TryLock on both paths, and the bias moving to the thread that takes the lock most.
#include "rdmq/common/biased_mutex.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace rdmq {
namespace {

// Two counters that the lock keeps equal; a thread that finds them apart saw another inside.
struct Guarded {
  BiasedMutex mu;
  int64_t a GUARDED_BY(mu) = 0;
  int64_t b GUARDED_BY(mu) = 0;
  std::atomic<int64_t> torn{0};

  void Bump() REQUIRES(mu) {
    if (a != b) torn.fetch_add(1);
    ++a;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // keep the two stores apart
    ++b;
  }
};

TEST_CASE("BiasedMutex: the owner's fast path and revoking threads exclude each other", "[unit]") {
  Guarded g;
  constexpr int kOwner = 300000, kOthers = 3, kEach = 3000, kTries = 20000;
  std::atomic<bool> owner_biased{false};
  std::atomic<int64_t> tried_ok{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (int i = 0; i < kOwner; ++i) {
      BiasedLock l(g.mu);
      g.Bump();
      if (g.mu.BiasedToCaller()) owner_biased = true;
    }
  });
  for (int t = 0; t < kOthers; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        BiasedLock l(g.mu);
        g.Bump();
        if (i % 64 == 0) std::this_thread::yield();
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < kTries; ++i) {
      BiasedLock l(g.mu, std::defer_lock);
      if (l.TryLock()) {
        g.Bump();
        tried_ok.fetch_add(1);
      }
    }
  });
  for (auto& t : threads) t.join();
  BiasedLock l(g.mu);
  CHECK(g.torn.load() == 0);
  CHECK(g.a == g.b);
  CHECK(g.a == kOwner + kOthers * kEach + tried_ok.load());
  // Three threads revoke a few thousand times among 300 000 owner acquisitions: the bias is won
  // (again and again, when a burst of revocations ends it), where membarrier exists.
  if (BiasedMutex::Supported()) {
    CHECK(owner_biased.load());
  } else {
    WARN("membarrier(2) is not available here: the lock never biases");
  }
}

TEST_CASE("BiasedMutex: the bias goes to a thread that takes the lock many times in a row, and moves",
          "[unit]") {
  if (!BiasedMutex::Supported()) {
    WARN("membarrier(2) is not available here: skipped");
    return;
  }
  Guarded g;
  auto take = [&g](int n) {
    for (int i = 0; i < n; ++i) {
      BiasedLock l(g.mu);
      g.Bump();
    }
  };
  CHECK_FALSE(g.mu.BiasedToCaller());
  take(static_cast<int>(BiasedMutex::kBiasAfter) - 1);
  CHECK_FALSE(g.mu.BiasedToCaller());
  take(1);
  CHECK(g.mu.BiasedToCaller());
  take(1000);  // fast
  CHECK(g.mu.BiasedToCaller());

  // Another thread: its first lock revokes, and the bias stays (the owner took the lock fast 1000
  // times since it won it, over kKeepBias).
  bool other_biased_after_one = true, other_biased_after_many = false;
  std::thread other([&] {
    take(1);
    other_biased_after_one = g.mu.BiasedToCaller();
    // Revocations with no fast acquisition between end the bias; then a run of kBiasAfter wins it.
    take(static_cast<int>(BiasedMutex::kBiasAfter) + 2);
    other_biased_after_many = g.mu.BiasedToCaller();
  });
  other.join();
  CHECK_FALSE(other_biased_after_one);
  CHECK(other_biased_after_many);
  CHECK_FALSE(g.mu.BiasedToCaller());
  take(1);  // the first thread now revokes the other's bias, and still counts right
  BiasedLock l(g.mu);
  CHECK(g.torn.load() == 0);
  CHECK(g.a == g.b);
  CHECK(g.a == static_cast<int64_t>(BiasedMutex::kBiasAfter) + 1000 + 1 + BiasedMutex::kBiasAfter + 2 + 1);
}

TEST_CASE("BiasedMutex: TryLock fails while the owner holds it on the fast path, and succeeds after",
          "[unit]") {
  if (!BiasedMutex::Supported()) {
    WARN("membarrier(2) is not available here: skipped");
    return;
  }
  Guarded g;
  for (uint32_t i = 0; i < BiasedMutex::kBiasAfter + 500; ++i) {
    BiasedLock l(g.mu);
    g.Bump();
  }
  REQUIRE(g.mu.BiasedToCaller());
  g.mu.Lock();  // fast
  bool got = true;
  std::thread([&] {
    BiasedLock l(g.mu, std::defer_lock);
    got = l.TryLock();
  }).join();
  CHECK_FALSE(got);
  g.mu.Unlock();
  std::thread([&] {
    BiasedLock l(g.mu, std::defer_lock);
    got = false;
    if (l.TryLock()) {
      got = true;
      g.Bump();
    }
  }).join();
  CHECK(got);
  BiasedLock l(g.mu);
  CHECK(g.a == g.b);
}

TEST_CASE("BiasedMutex: a child forked after the parent registered membarrier still excludes", "[unit]") {
  if (!BiasedMutex::Supported()) {
    WARN("membarrier(2) is not available here: skipped");
    return;
  }
  Guarded g;
  for (uint32_t i = 0; i < BiasedMutex::kBiasAfter + 10; ++i) {
    BiasedLock l(g.mu);
    g.Bump();
  }
  REQUIRE(g.mu.BiasedToCaller());  // the parent registered membarrier (the child may or may not be)
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The forking thread's token is this thread's: it is still the owner, and a new thread must
    // revoke it with a barrier the child registers for itself.
    constexpr int kOwner = 200000, kOther = 2000;
    std::thread other([&g] {
      for (int i = 0; i < kOther; ++i) {
        BiasedLock l(g.mu);
        g.Bump();
      }
    });
    for (int i = 0; i < kOwner; ++i) {
      BiasedLock l(g.mu);
      g.Bump();
    }
    other.join();
    BiasedLock l(g.mu);
    const bool ok = g.torn.load() == 0 && g.a == g.b &&
                    g.a == static_cast<int64_t>(BiasedMutex::kBiasAfter) + 10 + kOwner + kOther;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace rdmq
