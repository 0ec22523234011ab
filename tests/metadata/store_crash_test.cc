// A child process mutates a store as fast as it can and tells the parent, through a pipe, each
// mutation that returned OK; the parent kills it with SIGKILL at a random moment, reopens the
// store and checks that every acknowledged mutation is there. Run for the topic store and the
// offset store.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <thread>

#include "rdmq/metadata/offsets.h"
#include "rdmq/metadata/store.h"
#include "support/test_util.h"

namespace rdmq::metadata {
namespace {

// Runs `mutate(store, i)` for i = 0, 1, ... in a child until SIGKILL, then `check(store, acked)`
// on the reopened store with the set of i whose mutation returned OK.
template <class Store, class Mutate, class Check>
void KillWhileMutating(Mutate mutate, Check check) {
  std::mt19937_64 rng(test::TestSeed());
  const int trials = test::Trials(20, 3);
  for (int trial = 0; trial < trials; ++trial) {
    test::TempDir dir;
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      auto store = Store::Open({dir.str(), 8, true});
      if (!store.ok()) ::_exit(3);
      for (uint32_t i = 0;; ++i) {
        if (!mutate(**store, i).ok()) ::_exit(4);
        if (::write(fds[1], &i, sizeof i) != sizeof i) ::_exit(5);
      }
    }
    ::close(fds[1]);
    std::this_thread::sleep_for(std::chrono::microseconds(2000 + rng() % 50000));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    std::set<uint32_t> acked;
    uint32_t v;
    while (::read(fds[0], &v, sizeof v) == sizeof v) acked.insert(v);
    ::close(fds[0]);

    auto store = Store::Open({dir.str(), 8, true});
    INFO("trial " << trial << ": " << store.status().ToString());
    REQUIRE(store.ok());
    check(**store, acked);
  }
}

TEST_CASE("every acknowledged mutation survives SIGKILL", "[store][crash]") {
  KillWhileMutating<MetadataStore>(
      [](MetadataStore& s, uint32_t i) {
        return s.CreateTopic("t" + std::to_string(i), TopicConfig{}).status();
      },
      [](MetadataStore& s, const std::set<uint32_t>& acked) {
        for (uint32_t i : acked) {
          INFO("acknowledged topic t" << i);
          CHECK(s.GetTopic("t" + std::to_string(i)).ok());
        }
        // Nothing beyond the acknowledged prefix plus the one in flight can exist.
        CHECK(s.ListTopics().size() <= acked.size() + 1);
      });
}

TEST_CASE("every acknowledged offset commit survives SIGKILL", "[offsets][crash]") {
  // Commit i stores offset i for partition i % 4: the last acknowledged commit of each partition
  // (or the one in flight after it) is what a restart must find.
  KillWhileMutating<OffsetStore>(
      [](OffsetStore& s, uint32_t i) {
        return s.Commit("g", {{{"t", static_cast<int32_t>(i % 4)}, {int64_t{i}, -1, "m", 1}}});
      },
      [](OffsetStore& s, const std::set<uint32_t>& acked) {
        const uint32_t n = acked.empty() ? 0 : *acked.rbegin() + 1;
        for (uint32_t p = 0; p < 4 && p < n; ++p) {
          uint32_t last = p;
          while (last + 4 < n) last += 4;
          const auto o = s.Fetch("g", "t", static_cast<int32_t>(p));
          INFO("partition " << p << " last acknowledged offset " << last);
          REQUIRE(o.has_value());
          CHECK((o->offset == last || o->offset == last + 4));
        }
      });
}

}  // namespace
}  // namespace rdmq::metadata
