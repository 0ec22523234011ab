// rdmq::Mutex, MutexLock, UniqueLock and CondVar: exclusion, waiting and timeouts.
#include "rdmq/common/mutex.h"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace rdmq {
namespace {

struct Counter {
  Mutex mu;
  CondVar cv;
  int64_t n GUARDED_BY(mu) = 0;
};

TEST_CASE("MutexLock excludes other threads", "[unit]") {
  Counter c;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < 100000; ++i) {
        MutexLock l(c.mu);
        ++c.n;
      }
    });
  }
  for (auto& t : threads) t.join();
  MutexLock l(c.mu);
  CHECK(c.n == 400000);
}

TEST_CASE("UniqueLock can drop and retake its mutex, TryLock fails while another holds it", "[unit]") {
  Counter c;
  UniqueLock l(c.mu);
  c.n = 1;
  l.Unlock();
  CHECK_FALSE(l.owns());
  std::thread other([&c] {
    UniqueLock o(c.mu, std::defer_lock);
    const bool got = o.TryLock();  // free while the first lock is dropped
    CHECK(got);
    if (got) {
      c.mu.AssertHeld();
      c.n = 2;
    }
  });
  other.join();
  l.Lock();
  CHECK(l.owns());
  CHECK(c.n == 2);
  std::thread blocked([&c] {
    UniqueLock o(c.mu, std::defer_lock);
    CHECK_FALSE(o.TryLock());  // held by the test thread
  });
  blocked.join();
}

TEST_CASE("CondVar wakes a waiter, WaitFor times out when nobody notifies", "[unit]") {
  Counter c;
  std::thread waiter([&c] {
    UniqueLock l(c.mu);
    while (c.n == 0) c.cv.Wait(l);
    c.n = 2;
    c.cv.NotifyAll();
  });
  {
    MutexLock l(c.mu);
    c.n = 1;
  }
  c.cv.NotifyAll();
  {
    UniqueLock l(c.mu);
    while (c.n != 2) c.cv.Wait(l);
  }
  waiter.join();

  UniqueLock l(c.mu);
  CHECK_FALSE(c.cv.WaitFor(l, std::chrono::milliseconds(5)));
  CHECK(l.owns());
  l.Unlock();
  MutexLock m(c.mu);
  CHECK_FALSE(c.cv.WaitFor(c.mu, std::chrono::milliseconds(5)));
  c.n = 3;  // still held after the timed wait
  CHECK(c.n == 3);
}

}  // namespace
}  // namespace rdmq
