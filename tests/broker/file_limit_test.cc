// What partitions cost in file descriptors. On tcp none stays open (the log keeps no
// descriptor for its mappings), so a topic of many partitions fits under a low limit. On shm
// the fabric keeps one per slot and segment to pass to clients, and a broker that runs out
// while it creates a topic refuses it with an error that names the open-file limit, leaves
// nothing of the topic behind (no metadata, no partition directory), keeps the topics it had
// working, and creates the same topic once the limit allows it.
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>

#include "inproc_broker.h"
#include "rdmq/broker/broker.h"
#include "rdmq/client/admin.h"
#include "rdmq/producer/producer.h"
#include "rdmq/protocol/messages.h"
#include "support/test_util.h"

namespace rdmq::broker {
namespace {

using namespace std::chrono_literals;
using protocol::WireError;
using test::PartitionDirs;

// Lowers this process's soft open-file limit for its lifetime.
class SoftFileLimit {
 public:
  explicit SoftFileLimit(rlim_t limit) {
    REQUIRE(getrlimit(RLIMIT_NOFILE, &saved_) == 0);
    rlimit rl = saved_;
    rl.rlim_cur = limit;
    REQUIRE(setrlimit(RLIMIT_NOFILE, &rl) == 0);
  }
  ~SoftFileLimit() { Restore(); }
  void Restore() {
    if (!restored_) (void)setrlimit(RLIMIT_NOFILE, &saved_);
    restored_ = true;
  }
  SoftFileLimit(const SoftFileLimit&) = delete;
  SoftFileLimit& operator=(const SoftFileLimit&) = delete;

 private:
  rlimit saved_{};
  bool restored_ = false;
};

size_t OpenFds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST_CASE("a topic the open-file limit cannot hold is refused whole, with the limit named",
          "[broker][bad-input]") {
#ifdef RDMQ_UBSAN
  RDMQ_SKIP(
      "UBSan's vptr check needs a free file descriptor (it probes memory through a pipe), so a "
      "process out of them gets false 'invalid vptr' reports; the release stage runs this test");
#endif
  rdmq::test::TempDir dir("rdmq-fdlimit");
  test::Running r = test::Start(test::TestConfig(dir, "shm"));
  REQUIRE_OK(r.admin->CreateTopic("small", {{"partitions", "1"}}));
  const std::vector<std::pair<std::string, std::string>> big = {
      {"partitions", "64"}, {"segment.bytes", "65536"}, {"max.message.bytes", "16384"}};
  {
    // Room for a few partitions (each keeps two files open), not for 64.
    SoftFileLimit limit(OpenFds() + 24);
    auto made = r.admin->CreateTopic("big", big);
    REQUIRE_FALSE(made.ok());
    CHECK(made.status().is(WireError::kStorageError));
    INFO(made.status().ToString());
    CHECK(made.status().ToString().find("open-file limit") != std::string::npos);
    CHECK(made.status().ToString().find("ulimit -n") != std::string::npos);
    limit.Restore();
  }
  auto topics = r.admin->ListTopics();
  REQUIRE_OK(topics);
  REQUIRE(topics->size() == 1);
  CHECK((*topics)[0].name == "small");
  CHECK(PartitionDirs(dir, "big") == 0);

  // The topic that was there still takes records.
  producer::ProducerConfig pc;
  pc.client = r.client;
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  auto md = (*p)->Send({.topic = "small", .partition = 0, .value = "still here"}).get();
  REQUIRE_OK(md);
  CHECK(md->offset == 0);

  // With the limit back, the same topic is created in full.
  auto again = r.admin->CreateTopic("big", big);
  REQUIRE_OK(again);
  CHECK(again->partition_count() == 64);
  CHECK(PartitionDirs(dir, "big") == 64);
  REQUIRE_OK((*p)->Close(10s));
  r.admin.reset();
  REQUIRE_OK(r.broker->Shutdown());
}

TEST_CASE("on the tcp fabric a partition keeps no file open", "[broker]") {
  rdmq::test::TempDir dir("rdmq-fdlimit");
  test::Running r = test::Start(test::TestConfig(dir, "tcp"));
  producer::ProducerConfig pc;
  pc.client = r.client;
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  const size_t before = OpenFds();
  {
    // Room for what opening partitions side by side holds for a moment (log.open.threads = 8 of
    // them, a few files each), far from two per partition.
    SoftFileLimit limit(before + 48);
    auto made = r.admin->CreateTopic(
        "many", {{"partitions", "64"}, {"segment.bytes", "65536"}, {"max.message.bytes", "16384"}});
    INFO(made.status().ToString());
    REQUIRE_OK(made);
    CHECK(made->partition_count() == 64);
    // Producing rolls segments (new mappings, a spare made ahead): none of them holds a file.
    for (int i = 0; i < 64; ++i) {
      for (int k = 0; k < 40; ++k) {
        auto md = (*p)->Send({.topic = "many", .partition = i, .value = std::string(2000, 'x')}).get();
        REQUIRE_OK(md);
      }
    }
    CHECK(OpenFds() < before + 8);
    limit.Restore();
  }
  CHECK(PartitionDirs(dir, "many") == 64);
  REQUIRE_OK((*p)->Close(10s));
  r.admin.reset();
  REQUIRE_OK(r.broker->Shutdown());
}

}  // namespace
}  // namespace rdmq::broker
