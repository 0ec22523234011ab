// A child process creates topics as fast as it can and tells the parent, through a pipe, each one
// whose CreateTopic returned OK; the parent kills it with SIGKILL at a random moment, reopens the
// store and checks that every acknowledged topic is there.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <thread>

#include "rdmq/metadata/store.h"
#include "support/test_util.h"

namespace rdmq::metadata {
namespace {

TEST_CASE("every acknowledged mutation survives SIGKILL", "[store][crash]") {
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
      auto store = MetadataStore::Open({dir.str(), 8, true});
      if (!store.ok()) ::_exit(3);
      for (uint32_t i = 0;; ++i) {
        if (!(*store)->CreateTopic("t" + std::to_string(i), TopicConfig{}).ok()) ::_exit(4);
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

    auto store = MetadataStore::Open({dir.str(), 8, true});
    INFO("trial " << trial << ": " << store.status().ToString());
    REQUIRE(store.ok());
    for (uint32_t i : acked) {
      INFO("acknowledged topic t" << i);
      CHECK((*store)->GetTopic("t" + std::to_string(i)).ok());
    }
    // Nothing beyond the acknowledged prefix plus the one in flight can exist.
    CHECK((*store)->ListTopics().size() <= acked.size() + 1);
  }
}

}  // namespace
}  // namespace rdmq::metadata
