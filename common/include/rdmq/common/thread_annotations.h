// Clang thread-safety annotations (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html).
//
// They state which mutex guards a member and which locks a function needs, so that a clang
// build with -Wthread-safety -Werror (the asan stage of tests/run-all.sh) rejects code that
// touches guarded state without its lock. Under GCC they expand to nothing.
//
//   class Queue {
//    public:
//     void Push(int v) EXCLUDES(mu_) { MutexLock l(mu_); items_.push_back(v); }
//    private:
//     void DropLocked() REQUIRES(mu_);      // the caller holds mu_
//     Mutex mu_;
//     std::vector<int> items_ GUARDED_BY(mu_);
//   };
//
// Use rdmq::Mutex, MutexLock, UniqueLock and CondVar (mutex.h): std::mutex carries no
// annotations in libstdc++, so the analysis cannot see it.
#pragma once

#if defined(__clang__)
#define RDMQ_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define RDMQ_THREAD_ANNOTATION(x)
#endif

// A class that is a lock ("mutex") or a scoped holder of one.
#define CAPABILITY(x) RDMQ_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY RDMQ_THREAD_ANNOTATION(scoped_lockable)

// Data members: read or written only with the lock held (PT_: the pointee).
#define GUARDED_BY(x) RDMQ_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) RDMQ_THREAD_ANNOTATION(pt_guarded_by(x))

// Lock order between two mutexes.
#define ACQUIRED_BEFORE(...) RDMQ_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) RDMQ_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))

// Functions: the caller must hold (REQUIRES) or must not hold (EXCLUDES) the lock.
#define REQUIRES(...) RDMQ_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) RDMQ_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) RDMQ_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// Functions that take or drop a lock and return with it held or released.
#define ACQUIRE(...) RDMQ_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) RDMQ_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) RDMQ_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) RDMQ_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) RDMQ_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) RDMQ_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) RDMQ_THREAD_ANNOTATION(lock_returned(x))

// Turns the analysis off for one function; say why next to it.
#define NO_THREAD_SAFETY_ANALYSIS RDMQ_THREAD_ANNOTATION(no_thread_safety_analysis)
