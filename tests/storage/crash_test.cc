// Process crashes: a child process appends and commits continuously (exclusive appends, or shared
// reserve/write/commit with abandoned and crossing reservations, across segment rolls) and
// reports every acknowledged record to the parent over a pipe; the parent kills it with SIGKILL
// at a random moment, recovers the log, and checks that every acknowledged record is present
// with its exact bytes and that nothing invalid is readable. Two or three kills per directory, so
// bytes truncated by one recovery get the chance to come back (they must not).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "pipe_collector.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"
#include "rdmq/storage/log.h"
#include "workload.h"

using namespace rdmq;
using namespace rdmq::storage;
using rdmq::storage::test::Ack;
using rdmq::storage::test::Checker;
using rdmq::storage::test::Workload;

namespace {

// The child: writes until killed. Exit codes: 2 open failed, 3 a step failed, 4 pipe broken.
[[noreturn]] void RunWriter(const std::string& dir, const LogOptions& options, uint32_t round, uint64_t seed,
                            bool shared, int fd) {
  ::signal(SIGSEGV, SIG_DFL);
  ::signal(SIGABRT, SIG_DFL);
  auto log = PartitionLog::Open(DefaultEnv(), dir, options);
  if (!log.ok()) {
    std::fprintf(stderr, "writer: open failed: %s\n", log.status().ToString().c_str());
    std::_Exit(2);
  }
  Workload w(log->get(), round, seed, shared);
  bool pipe_ok = true;
  auto on_ack = [&](const Ack& a) {
    if (::write(fd, &a, sizeof a) != static_cast<ssize_t>(sizeof a)) pipe_ok = false;
  };
  while (true) {
    const Status s = w.Step(on_ack);
    if (!s.ok()) {
      std::fprintf(stderr, "writer: step failed: %s\n", s.ToString().c_str());
      std::_Exit(3);
    }
    if (!pipe_ok) std::_Exit(4);
  }
}

struct Kill {
  int status = 0;
  uint64_t acks = 0;
};

// Forks a writer, collects its acknowledgements until a random moment, kills it, drains the pipe.
Kill CrashOnce(const std::string& dir, const LogOptions& options, uint32_t round, bool shared,
               std::mt19937_64& rng, Checker& checker) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const uint64_t seed = rng();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    RunWriter(dir, options, round, seed, shared, fds[1]);
  }
  ::close(fds[1]);
  Kill k;
  rdmq::storage::test::PipeCollector<Ack> collector(fds[0]);
  // Sometimes kill during the child's own recovery, usually some time into the stream.
  if (rng() % 5 == 0) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(rng() % 3'000'000));
  } else {
    const uint64_t give_up = MonoNanos() + 5'000'000'000ULL;
    while (collector.count() == 0 && MonoNanos() < give_up)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    std::this_thread::sleep_for(std::chrono::nanoseconds(rng() % 25'000'000));
  }
  ::kill(pid, SIGKILL);
  REQUIRE(::waitpid(pid, &k.status, 0) == pid);
  const std::vector<Ack> acks = collector.Join();
  for (const Ack& a : acks) checker.OnAck(a);
  k.acks = acks.size();
  ::close(fds[0]);
  return k;
}

}  // namespace

TEST_CASE("a writer killed with SIGKILL at random moments loses nothing acknowledged", "[crash][kill]") {
  const uint64_t seed = ::rdmq::test::TestSeed();
  std::mt19937_64 rng(seed);
  const int trials = ::rdmq::test::Trials(100, 10);
  uint64_t acks = 0, truncated = 0, segments = 0;
  int shared_trials = 0, rolled_trials = 0;
  for (int trial = 0; trial < trials; ++trial) {
    ::rdmq::test::TempDir dir("rdmq-crash");
    LogOptions o;
    o.segment_bytes = (rng() % 2) ? 32 << 10 : 256 << 10;
    o.persist = rng() % 4 == 0 ? PersistMode::kMsync : PersistMode::kNone;
    o.index_interval_bytes = 1024;
    o.checkpoint_every_commits = 1 + static_cast<uint32_t>(rng() % 32);
    o.reservation_lease_ns = 1000;
    const bool shared = rng() % 2;
    shared_trials += shared;
    Checker checker;
    const uint32_t rounds = 2 + static_cast<uint32_t>(rng() % 2);
    for (uint32_t round = 0; round < rounds; ++round) {
      INFO("trial " << trial << " round " << round << " shared " << shared << " mode "
                    << PersistModeName(o.persist) << " segment " << o.segment_bytes);
      const Kill k = CrashOnce(dir.str(), o, round, shared, rng, checker);
      INFO("child status " << k.status);
      REQUIRE(WIFSIGNALED(k.status));  // it was killed, it did not fail on its own
      REQUIRE(WTERMSIG(k.status) == SIGKILL);
      acks += k.acks;
      auto log = PartitionLog::Open(DefaultEnv(), dir.str(), o);
      REQUIRE_OK(log.status());
      truncated += (*log)->recovery().truncated_bytes;
      const std::string problem = checker.CheckAfterCrash(**log, round);
      INFO(problem);
      REQUIRE(problem.empty());
      if (round + 1 == rounds) {
        segments += (*log)->Segments().size();
        rolled_trials += (*log)->Segments().size() > 1;
      }
    }
  }
  CHECK(acks > static_cast<uint64_t>(trials) * 100);
  CHECK(shared_trials > 0);
  CHECK(rolled_trials > 0);
  WARN("SIGKILL trials: " << trials << ", acknowledged records " << acks << ", torn/stale bytes truncated "
                          << truncated << ", segments " << segments << " (" << rolled_trials
                          << " trials rolled)");
}
