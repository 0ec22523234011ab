// Replication on the verbs fabric: two rdmq-broker processes on one RDMA device (Soft-RoCE in the
// qemu VM of tests/verbs/softroce-vm.sh), the leader WRITing its committed batches into its
// follower's log over verbs. ZooKeeper (Java) does not fit in the VM: the runner starts one on
// the host and names it in $RDMQ_TEST_ZOOKEEPER (10.0.2.2:PORT, the host's loopback as qemu's user
// network shows it). Outside the VM the test starts a ZooKeeper of its own, and it skips where no
// RDMA device can be opened.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>
#include <string>

#include "cluster/cluster_fixture.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::test {
namespace {

using json = nlohmann::json;

bool VerbsAvailable() {
  fabric::FabricOptions o;
  o.provider = fabric::Provider::kVerbs;
  return fabric::Fabric::Open(o).ok();
}

// The address of the RDMA-capable interface ($RDMQ_VERBS_LISTEN, host:port, as the VM sets it).
std::string VerbsHost() {
  const char* e = std::getenv("RDMQ_VERBS_LISTEN");
  if (e == nullptr || *e == '\0') return "127.0.0.1";
  const std::string s = e;
  return s.substr(0, s.rfind(':'));
}

// The VM runs on TCG, every process a few times slower than on the host.
constexpr std::chrono::seconds kPatience{90};

json Describe(Cluster& c, int via) {
  const RunResult r = c.Rdmq(via, {"topic", "describe", "rep", "--json"});
  if (r.code != 0) return json();
  const json d = json::parse(r.out, nullptr, false);
  if (d.is_discarded() || !d.contains("partitions") || d["partitions"].empty()) return json();
  return d["partitions"][0];
}

// "<offset> <value>" lines for records `prefix`-FROM .. `prefix`-(TO-1) at offsets from FROM.
std::string Expected(const std::string& prefix, int from, int to) {
  std::string out;
  for (int i = from; i < to; ++i) out += std::to_string(i) + " " + prefix + "-" + std::to_string(i) + "\n";
  return out;
}

void Produce(Cluster& c, int via, const std::string& prefix, int from, int to) {
  std::string lines;
  for (int i = from; i < to; ++i) lines += prefix + "-" + std::to_string(i) + "\n";
  const RunResult r =
      Run({Bin("rdmq-produce"), "-b", c.brokers.at(via)->address(), "-p", "0", "rep"}, lines, 120);
  REQUIRE_RUN(r, 0);
}

// What rdmq's own consumer reads of "rep" through broker `via` (it reads at the leader, up to
// the high watermark).
std::string ReadAll(Cluster& c, int via) {
  const RunResult r =
      Run({Bin("rdmq-consume"), "-b", c.brokers.at(via)->address(), "-e", "-f", "%o %s\\n", "rep"}, "", 60);
  return r.code == 0 ? r.out : "rdmq-consume failed: " + r.err;
}

}  // namespace

TEST_CASE(
    "replication over verbs: the leader WRITEs its log into its follower's, which takes over with all of it",
    "[verbs][cluster][replication]") {
  if (!VerbsAvailable()) RDMQ_SKIP("no RDMA device (run tests/verbs/softroce-vm.sh)");
  std::unique_ptr<ZooKeeperServer> own;
  std::string zookeeper;
  if (const char* e = std::getenv("RDMQ_TEST_ZOOKEEPER"); e != nullptr && *e != '\0') {
    zookeeper = e;
  } else {
    if (!ZooKeeperServer::Available())
      RDMQ_SKIP("Debian's zookeeper is not installed (deploy/install-deps.sh)");
    own = std::make_unique<ZooKeeperServer>();
    std::string error;
    const bool started = own->Start(&error);
    INFO(error);
    REQUIRE(started);
    zookeeper = own->connect();
  }
  // A slow VM (TCG) gets a longer ZooKeeper session than the loopback tests' 2 s. The VM's
  // interface is not loopback: nobody else can reach it, so anonymous clients are accepted.
  Cluster c(zookeeper, {"--set", "cluster.zookeeper.session.timeout.ms=6000", "--set", "listen.http=off",
                        "--set", "security.allow.anonymous=true"});
  c.fabric = "verbs";
  c.host = VerbsHost();
  for (int id : {1, 2}) c.Start(id);
  REQUIRE_RUN(c.Rdmq(1, {"topic", "create", "rep", "-c", "partitions=1", "-c", "replication.factor=2"}), 0);
  json part;
  REQUIRE(Eventually(
      [&] {
        part = Describe(c, 1);
        return !part.is_null() && part["leader"].get<int>() >= 1 && part["isr"].size() == 2;
      },
      kPatience));
  const int first = part["leader"].get<int>();
  const int second = first == 1 ? 2 : 1;
  const int32_t epoch = part["leader_epoch"].get<int32_t>();
  INFO("first leader " << first << " at epoch " << epoch);

  // Written with rdmq's own producer (RDMA WRITE into the leader's log); readable once the
  // follower holds it too (the high watermark).
  Produce(c, second, "a", 0, 200);
  const std::string a = Expected("a", 0, 200);
  REQUIRE(Eventually([&] { return ReadAll(c, first) == a; }, kPatience));

  // The leader dies: the follower takes over with every record, at the same offsets.
  c.brokers.at(first)->Kill();
  REQUIRE(Eventually(
      [&] {
        part = Describe(c, second);
        return !part.is_null() && part["leader"].get<int>() == second;
      },
      kPatience));
  CHECK(part["leader_epoch"].get<int32_t>() > epoch);
  CHECK(ReadAll(c, second) == a);
  Produce(c, second, "b", 200, 260);

  // The old leader returns as a follower, is cut back and fed what it missed, and rejoins the
  // ISR; then the second leader dies and the first leads with all of it.
  c.Start(first);
  REQUIRE(Eventually(
      [&] {
        part = Describe(c, second);
        return !part.is_null() && part["isr"].size() == 2;
      },
      kPatience));
  const std::string all = a + Expected("b", 200, 260);
  REQUIRE(Eventually([&] { return ReadAll(c, second) == all; }, kPatience));
  c.brokers.at(second)->Kill();
  REQUIRE(Eventually(
      [&] {
        part = Describe(c, first);
        return !part.is_null() && part["leader"].get<int>() == first;
      },
      kPatience));
  CHECK(ReadAll(c, first) == all);
}

}  // namespace rdmq::test
