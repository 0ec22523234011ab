// The Kafka listener judged by kcat (Debian's, on librdkafka): metadata, producing and consuming
// with every compression codec, a consumer group, and the same records seen byte for byte by
// kcat and by rdmq's own tools.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "cli/cli_fixture.h"

namespace rdmq::test {
namespace {

std::string Lines(int from, int to) {
  std::string s;
  for (int i = from; i <= to; ++i) s += "line-" + std::to_string(i) + "\n";
  return s;
}

TEST_CASE("kcat -L lists this broker and the topics rdmq created", "[e2e][kafka][kcat]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "orders", "--partitions", "3"}), 0);
  const RunResult r = f.Kcat({"-L", "-J"});
  REQUIRE_RUN(r, 0);
  const nlohmann::json j = ParseJson(r);
  REQUIRE(j["brokers"].size() == 1);
  CHECK(j["brokers"][0]["name"].get<std::string>() == f.kafka());
  CHECK(j["brokers"][0]["id"] == 0);
  bool found = false;
  for (const auto& t : j["topics"]) {
    if (t["topic"] != "orders") continue;
    found = true;
    CHECK(t["partitions"].size() == 3);
    for (const auto& p : t["partitions"]) CHECK(p["leader"] == 0);
  }
  CHECK(found);
}

TEST_CASE("kcat -P of 100 000 lines with each codec, read back identical with kcat -C -e",
          "[e2e][kafka][kcat][compression]") {
  Fixture f;
  const std::string input = Lines(1, 100000);
  for (const std::string codec : {"none", "gzip", "snappy", "lz4", "zstd"}) {
    DYNAMIC_SECTION(codec) {
      const std::string topic = "lines-" + codec;
      REQUIRE_RUN(f.Rdmq({"topic", "create", topic, "--partitions", "1"}), 0);
      REQUIRE_RUN(f.Kcat({"-P", "-t", topic, "-z", codec, "-X", "linger.ms=5"}, input), 0);
      const RunResult back = f.Kcat({"-C", "-t", topic, "-e", "-q"});
      REQUIRE_RUN(back, 0);
      CHECK(back.out == input);
      // The same records through rdmq's own consumer (which decompresses what kcat compressed).
      const RunResult own = f.Consume({"-e", topic});
      REQUIRE_RUN(own, 0);
      CHECK(own.out == input);
    }
  }
}

TEST_CASE("kcat -G reads as a group member, rdmq group describe shows it and its commits",
          "[e2e][kafka][kcat][group]") {
  Fixture f({"--set", "group.initial.rebalance.delay.ms=100"});
  REQUIRE_RUN(f.Rdmq({"topic", "create", "g", "--partitions", "2"}), 0);
  REQUIRE_RUN(f.Produce({"g"}, Lines(1, 1000)), 0);
  // kcat in the background as a group member; it stays until killed.
  std::thread member([&] {
    (void)f.Sh("timeout 60 kcat -b " + f.kafka() +
                   " -G readers -q -o beginning -X auto.commit.interval.ms=100 g > member.out",
               90);
  });
  // Its membership and assignment, as rdmq sees them.
  nlohmann::json d;
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const RunResult r = f.Rdmq({"group", "describe", "readers", "--json"});
    if (r.code != 0) continue;
    d = nlohmann::json::parse(r.out, nullptr, false);
    if (d.is_discarded() || !d.contains("members") || d["members"].size() != 1) continue;
    // Every record consumed and committed.
    int64_t committed = 0;
    for (const auto& p : d["partitions"]) {
      if (p["committed_offset"].is_number()) committed += p["committed_offset"].get<int64_t>();
    }
    seen = committed == 1000 && d["members"][0]["assignment"].size() == 2;
  }
  INFO(d.dump(2));
  CHECK(seen);
  // ("[k]cat": the pattern must not match the shell that runs pkill, whose command line holds it.)
  const RunResult killed = f.Sh("pkill -TERM -f '[k]cat -b " + f.kafka() + " -G readers' || true");
  member.join();
  CHECK(killed.code == 0);
  const RunResult out = f.Sh("sort -t- -k2 -n member.out");
  CHECK(out.out == Lines(1, 1000));
}

TEST_CASE("rdmq-produce to kcat and kcat to rdmq-consume: keys, values, headers and timestamps identical",
          "[e2e][kafka][kcat][cross]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "x", "--partitions", "1"}), 0);
  const std::string fmt = "%p %o %k=%s [%h] %T\n";
  // rdmq's producer, read by kcat and by rdmq-consume: the same bytes, so the same rendering.
  REQUIRE_RUN(f.Produce({"-K", ":", "-H", "source=rdmq", "-H", "n=1", "x"}, "k1:v1\nk2:v2\n:no-key\n"), 0);
  const RunResult kc = f.Kcat({"-C", "-t", "x", "-e", "-q", "-f", fmt});
  const RunResult rc = f.Consume({"-e", "-f", fmt, "x"});
  REQUIRE_RUN(kc, 0);
  REQUIRE_RUN(rc, 0);
  CHECK(kc.out == rc.out);
  CHECK(Contains(kc.out, "0 0 k1=v1 [source=rdmq,n=1]"));
  // kcat's producer (keys, headers, explicit timestamps), read by rdmq-consume.
  REQUIRE_RUN(f.Rdmq({"topic", "create", "y", "--partitions", "1"}), 0);
  REQUIRE_RUN(f.Kcat({"-P", "-t", "y", "-K", ":", "-H", "h1=a", "-H", "h2=b"}, "a:1\nb:2\n"), 0);
  const RunResult kc2 = f.Kcat({"-C", "-t", "y", "-e", "-q", "-f", fmt});
  const RunResult rc2 = f.Consume({"-e", "-f", fmt, "y"});
  REQUIRE_RUN(kc2, 0);
  REQUIRE_RUN(rc2, 0);
  CHECK(kc2.out == rc2.out);
  CHECK(Contains(rc2.out, "0 1 b=2 [h1=a,h2=b]"));
  // Keys land on the same partition from both front doors (Kafka's murmur2 partitioner).
  REQUIRE_RUN(f.Rdmq({"topic", "create", "keys", "--partitions", "8"}), 0);
  std::string keyed;
  for (int i = 0; i < 64; ++i) keyed += "key" + std::to_string(i) + ":v\n";
  REQUIRE_RUN(f.Produce({"-K", ":", "keys"}, keyed), 0);
  // (librdkafka's default partitioner is CRC32-based; Java clients and rdmq use murmur2, which
  // librdkafka names murmur2_random.)
  REQUIRE_RUN(f.Kcat({"-P", "-t", "keys", "-K", ":", "-X", "partitioner=murmur2_random"}, keyed), 0);
  const RunResult parts = f.Consume({"-e", "-f", "%k %p\n", "keys"});
  REQUIRE_RUN(parts, 0);
  std::map<std::string, std::set<std::string>> where;
  std::istringstream in(parts.out);
  std::string k, p;
  while (in >> k >> p) where[k].insert(p);
  REQUIRE(where.size() == 64);
  for (const auto& [key, ps] : where) {
    INFO(key);
    CHECK(ps.size() == 1);
  }
}

}  // namespace
}  // namespace rdmq::test
