// Compiled by the thread_safety.rejects_violation test with clang -Wthread-safety -Werror, which
// must refuse it: each function touches guarded state without the lock. If this compiles, the
// annotations in common/ have stopped meaning anything.
#include "rdmq/common/mutex.h"

namespace {

struct Guarded {
  rdmq::Mutex mu;
  int value GUARDED_BY(mu) = 0;
  void NeedsLock() REQUIRES(mu) { ++value; }
};

#if VIOLATION == 1
int ReadWithoutLock(Guarded& g) { return g.value; }
#elif VIOLATION == 2
void CallWithoutLock(Guarded& g) { g.NeedsLock(); }
#elif VIOLATION == 3
void UseAfterUnlock(Guarded& g) {
  rdmq::UniqueLock l(g.mu);
  l.Unlock();
  g.value = 1;
}
#else
void Fine(Guarded& g) {
  rdmq::MutexLock l(g.mu);
  g.NeedsLock();
}
#endif

}  // namespace
