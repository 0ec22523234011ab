// A broker that runs out of file descriptors while it creates a topic: the creation is refused
// with an error that names the open-file limit, nothing of the topic is left behind (no
// metadata, no partition directory), the topics it already had keep working, and the same
// topic is created once the limit allows it.
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

size_t PartitionDirs(const rdmq::test::TempDir& dir, const std::string& topic) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.str() + "/topics")) {
    if (e.path().filename().string().rfind(topic + "-", 0) == 0) ++n;
  }
  return n;
}

TEST_CASE("a topic the open-file limit cannot hold is refused whole, with the limit named",
          "[broker][bad-input]") {
#ifdef RDMQ_UBSAN
  RDMQ_SKIP(
      "UBSan's vptr check needs a free file descriptor (it probes memory through a pipe), so a "
      "process out of them gets false 'invalid vptr' reports; the release stage runs this test");
#endif
  const std::string fabric = GENERATE("shm", "tcp");
  INFO(fabric);
  rdmq::test::TempDir dir("rdmq-fdlimit");
  test::Running r = test::Start(test::TestConfig(dir, fabric));
  REQUIRE_OK(r.admin->CreateTopic("small", {{"partitions", "1"}}));
  const std::vector<std::pair<std::string, std::string>> big = {
      {"partitions", "64"}, {"segment.bytes", "65536"}, {"max.message.bytes", "16384"}};
  {
    // Room for a few partitions (each keeps at least two files open), not for 64.
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

}  // namespace
}  // namespace rdmq::broker
