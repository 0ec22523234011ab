// A cluster member opens the replicas it holds side by side (TopicTable::OpenEach): a broker of
// a cluster restarts with all of its many replicas, and one replica that cannot be opened (a file
// where its directory goes) is logged and stays closed while every other one serves again;
// with the obstacle gone, the next start opens that one too with all its records.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "cli/cli_fixture.h"
#include "cluster/cluster_fixture.h"
#include "support/zookeeper_server.h"

namespace rdmq::test {
namespace {

constexpr int kPartitions = 24;
constexpr int kBlocked = 13;

// Records per partition of `topic` that rdmq-consume reads through broker `via`, partition by
// partition (each to its end): a partition that cannot be read counts -1.
std::map<int, int> CountPerPartition(Cluster& c, int via, const std::string& topic) {
  std::map<int, int> n;
  for (int p = 0; p < kPartitions; ++p) {
    const RunResult r =
        Run({Bin("rdmq-consume"), "-b", c.brokers.at(via)->address(), "-p", std::to_string(p), "-e", topic},
            "", 60);
    UNSCOPED_INFO("partition " << p << ": exit " << r.code << ", " << r.err);
    n[p] = r.code == 0 ? static_cast<int>(std::count(r.out.begin(), r.out.end(), '\n')) : -1;
  }
  return n;
}

TEST_CASE("cluster: a restarted broker opens its replicas side by side, a broken one stays closed alone",
          "[e2e][cluster]") {
  START_CLUSTER(c);
  c.Start(1);
  REQUIRE_RUN(c.Rdmq(1, {"topic", "create", "many", "--partitions", std::to_string(kPartitions)}), 0);
  std::string lines;
  for (int i = 0; i < 2400; ++i) lines += "k" + std::to_string(i % 240) + ":v" + std::to_string(i) + "\n";
  REQUIRE_RUN(Run({Bin("rdmq-produce"), "-b", c.brokers.at(1)->address(), "-K", ":", "many"}, lines, 60), 0);
  const std::map<int, int> before = CountPerPartition(c, 1, "many");
  int total = 0;
  for (const auto& [p, n] : before) {
    CHECK(n > 0);  // 240 keys over 24 partitions
    total += n;
  }
  REQUIRE(total == 2400);

  // Stopped, its partition 13 set aside and a file put where it goes.
  REQUIRE(c.brokers.at(1)->Stop() == 0);
  const std::string topics = c.brokers.at(1)->data_dir() + "/topics";
  const std::string blocked = topics + "/many-" + std::to_string(kBlocked);
  std::filesystem::rename(blocked, c.tmp.str() + "/aside");
  const std::string obstacle = "not a partition\n";
  std::ofstream(blocked) << obstacle;

  c.Start(1);
  REQUIRE(Eventually([&] { return c.Json(1, {"cluster", "status"})["brokers"].size() == 1; }));
  const std::map<int, int> restarted = CountPerPartition(c, 1, "many");
  for (const auto& [p, n] : restarted) {
    INFO("partition " << p);
    if (p == kBlocked) {
      CHECK(n == -1);
    } else {
      CHECK(n == before.at(p));
    }
  }
  const std::string log = c.brokers.at(1)->Log();
  CHECK(Contains(log, "opening a replica failed"));
  CHECK(Contains(log, "partition=" + std::to_string(kBlocked)));
  std::ifstream kept(blocked);
  std::stringstream bytes;
  bytes << kept.rdbuf();
  CHECK(bytes.str() == obstacle);

  // The obstacle removed and the partition back: the next start opens all of them.
  REQUIRE(c.brokers.at(1)->Stop() == 0);
  std::filesystem::remove(blocked);
  std::filesystem::rename(c.tmp.str() + "/aside", blocked);
  c.Start(1);
  CHECK(CountPerPartition(c, 1, "many") == before);
}

}  // namespace
}  // namespace rdmq::test
