// Mutexes and condition variables that clang's thread-safety analysis understands
// (thread_annotations.h). They cost exactly what std::mutex and std::condition_variable cost.
//
//   Mutex mu_;
//   int n_ GUARDED_BY(mu_) = 0;
//
//   { MutexLock l(mu_); ++n_; }                      // held for the scope
//
//   UniqueLock l(mu_);                               // held, may be dropped and retaken
//   while (n_ == 0) cv_.Wait(l);                     // condition loops stay visible to the analysis
//   l.Unlock(); Slow(); l.Lock();
//
// Threading: Mutex is not recursive; a MutexLock/UniqueLock belongs to the thread that made it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "rdmq/common/thread_annotations.h"

namespace rdmq {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds this mutex (where it cannot see so itself).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

  // BasicLockable spellings, for std::scoped_lock over several mutexes.
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  friend class UniqueLock;
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// Holds a Mutex, with Unlock()/Lock() in between (std::unique_lock's role); what CondVar waits
// with. std::defer_lock starts it unlocked (then Lock() or `if (l.TryLock())`).
class SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.mu_) {}
  UniqueLock(Mutex& mu, std::defer_lock_t) EXCLUDES(mu) : lock_(mu.mu_, std::defer_lock) {}
  ~UniqueLock() RELEASE() = default;
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;

  void Lock() ACQUIRE() { lock_.lock(); }
  bool TryLock() TRY_ACQUIRE(true) { return lock_.try_lock(); }
  void Unlock() RELEASE() { lock_.unlock(); }
  bool owns() const { return lock_.owns_lock(); }

 private:
  friend class CondVar;
  std::unique_lock<std::mutex> lock_;
};

class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Each Wait releases the lock while it sleeps and holds it again when it returns; a return
  // may be spurious, so callers wait in a loop on their condition.
  void Wait(UniqueLock& l) { cv_.wait(l.lock_); }
  // False on timeout.
  template <class Rep, class Period>
  bool WaitFor(UniqueLock& l, std::chrono::duration<Rep, Period> d) {
    return cv_.wait_for(l.lock_, d) == std::cv_status::no_timeout;
  }
  template <class Clock, class Duration>
  bool WaitUntil(UniqueLock& l, std::chrono::time_point<Clock, Duration> t) {
    return cv_.wait_until(l.lock_, t) == std::cv_status::no_timeout;
  }
  // The same with a Mutex the caller holds through a MutexLock.
  void Wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> l(mu.mu_, std::adopt_lock);
    cv_.wait(l);
    l.release();
  }
  template <class Rep, class Period>
  bool WaitFor(Mutex& mu, std::chrono::duration<Rep, Period> d) REQUIRES(mu) {
    std::unique_lock<std::mutex> l(mu.mu_, std::adopt_lock);
    const bool woken = cv_.wait_for(l, d) == std::cv_status::no_timeout;
    l.release();
    return woken;
  }

  void NotifyOne() noexcept { cv_.notify_one(); }
  void NotifyAll() noexcept { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace rdmq
