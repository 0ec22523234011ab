// The command-line tools against a real broker, each in its own process: rdmq topic/cluster
// commands (text and --json), their errors and exit codes, rdmq-produce | rdmq-consume through
// pipes, partition inspect on the broker's files with a flipped bit, and rdmq-demo's verifier.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "cli/cli_fixture.h"

namespace rdmq::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST_CASE("topic create, list, describe, alter and delete against a broker", "[e2e][cli]") {
  Fixture f;
  auto r = f.Rdmq({"topic", "create", "orders", "--partitions", "3", "-c", "retention.ms=3600000"});
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.out, "created topic orders (3 partitions)"));

  r = f.Rdmq({"topic", "create", "logs", "--json"});
  REQUIRE_RUN(r, 0);
  json created = ParseJson(r);
  CHECK(created["name"] == "logs");
  CHECK(created["partition_count"] == 1);

  r = f.Rdmq({"topic", "list", "--json"});
  REQUIRE_RUN(r, 0);
  json list = ParseJson(r);
  REQUIRE(list["topics"].size() == 2);
  CHECK(list["topics"][0]["name"] == "logs");  // sorted by name
  CHECK(list["topics"][1]["name"] == "orders");
  CHECK(list["topics"][1]["partition_count"] == 3);

  r = f.Rdmq({"topic", "list"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out.rfind("TOPIC", 0) == 0);
  CHECK(Contains(r.out, "orders"));

  r = f.Rdmq({"topic", "describe", "orders", "--json"});
  REQUIRE_RUN(r, 0);
  json d = ParseJson(r);
  CHECK(d["name"] == "orders");
  CHECK(d["partition_count"] == 3);
  CHECK(d["configs"]["retention.ms"] == "3600000");
  REQUIRE(d["partitions"].size() == 3);
  for (int p = 0; p < 3; ++p) {
    CHECK(d["partitions"][p]["partition"] == p);
    CHECK(d["partitions"][p]["high_watermark"] == 0);
    CHECK(d["partitions"][p]["log_start_offset"] == 0);
  }
  r = f.Rdmq({"topic", "describe", "orders"});
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.out, "HIGH WATERMARK"));
  CHECK(Contains(r.out, "retention.ms"));

  r = f.Rdmq({"topic", "alter", "orders", "--partitions", "4", "--json"});
  REQUIRE_RUN(r, 0);
  CHECK(ParseJson(r)["partition_count"] == 4);
  r = f.Rdmq({"topic", "describe", "orders", "--json"});
  REQUIRE_RUN(r, 0);
  CHECK(ParseJson(r)["partitions"].size() == 4);

  r = f.Rdmq({"topic", "delete", "orders"});
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.out, "deleted topic orders"));
  r = f.Rdmq({"topic", "list", "--json"});
  REQUIRE_RUN(r, 0);
  list = ParseJson(r);
  REQUIRE(list["topics"].size() == 1);
  CHECK(list["topics"][0]["name"] == "logs");

  r = f.Rdmq({"cluster", "status", "--json"});
  REQUIRE_RUN(r, 0);
  json status = ParseJson(r);
  CHECK(status["reachable"] == true);
  CHECK(status["topic_count"] == 1);
  CHECK(status["partition_count"] == 1);
  CHECK(f.broker().Stop() == 0);
}

TEST_CASE("the admin CLI's errors: clear messages and exit codes", "[e2e][cli]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "t1"}), 0);

  // Broker errors: exit 1, naming the problem and the thing.
  auto r = f.Rdmq({"topic", "describe", "nope"});
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "UNKNOWN_TOPIC"));
  CHECK(Contains(r.err, "nope"));
  CHECK(r.out.empty());
  r = f.Rdmq({"topic", "delete", "nope"});
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "UNKNOWN_TOPIC"));
  REQUIRE_RUN(f.Rdmq({"topic", "delete", "nope", "--if-exists"}), 0);
  r = f.Rdmq({"topic", "create", "t2", "-c", "retention.ms=abc"});
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "INVALID_CONFIG"));
  CHECK(Contains(r.err, "retention.ms"));
  r = f.Rdmq({"topic", "create", "t2", "-c", "no.such.key=1"});
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "no.such.key"));
  r = f.Rdmq({"topic", "create", "t1"});
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "TOPIC_EXISTS"));
  REQUIRE_RUN(f.Rdmq({"topic", "create", "t1", "--if-not-exists"}), 0);
  r = f.Rdmq({"topic", "create", "bad/name"});
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "INVALID_TOPIC_NAME"));
  // Nothing of that changed the topics.
  r = f.Rdmq({"topic", "list", "--json"});
  REQUIRE_RUN(r, 0);
  CHECK(ParseJson(r)["topics"].size() == 1);

  // Usage errors: exit 2, pointing to --help.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"topic", "create"},
           {"topic", "create", "x", "--partitions", "0"},
           {"topic", "create", "x", "--bogus"},
           {"topic", "alter", "t1"},
           {"topic", "frobnicate"},
           {"bogus"},
           {},
           {"topic"},
           {"topic", "create", "x", "-c", "novalue"},
       }) {
    r = f.Rdmq(args);
    INFO("args: " << json(args).dump());
    REQUIRE_RUN(r, 2);
    CHECK(Contains(r.err, "rdmq: "));  // (with no (sub)command, the help text comes first)
  }
  r = f.Rdmq({"topic", "create", "x", "--bogus"});
  CHECK(Contains(r.err, "unknown option '--bogus'; see 'rdmq topic create --help'"));

  // --help everywhere: exit 0, usage and examples on stdout.
  for (const auto& args : std::vector<std::vector<std::string>>{{"--help"},
                                                                {"topic", "--help"},
                                                                {"topic", "create", "--help"},
                                                                {"topic", "list", "-h"},
                                                                {"partition", "inspect", "--help"},
                                                                {"cluster", "status", "--help"}}) {
    r = f.Rdmq(args);
    INFO("args: " << json(args).dump());
    REQUIRE_RUN(r, 0);
    CHECK(r.out.rfind("Usage: rdmq", 0) == 0);
    CHECK(Contains(r.out, "Examples:"));
  }
  for (const char* tool : {"rdmq-produce", "rdmq-consume", "rdmq-demo"}) {
    r = Run({Bin(tool), "--help"});
    REQUIRE_RUN(r, 0);
    CHECK(Contains(r.out, std::string("Usage: ") + tool));
  }

  // A broker that is not there: exit 1 saying so.
  r = Run({Bin("rdmq"), "--broker", "unix:" + f.tmp().str() + "/nothing.sock", "--timeout", "2000", "topic",
           "list"});
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "cannot reach the broker at unix:" + f.tmp().str() + "/nothing.sock"));
  r = Run({Bin("rdmq"), "--broker", "unix:" + f.tmp().str() + "/nothing.sock", "--timeout", "2000", "cluster",
           "status", "--json"});
  REQUIRE_RUN(r, 1);
  CHECK(ParseJson(r)["reachable"] == false);
}

TEST_CASE("rdmq-produce | rdmq-consume round trip through pipes", "[e2e][cli]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "pipe", "--partitions", "3"}), 0);
  const int n = Trials(3000, 300);
  // Keys k0..k9, values carry a per-key counter so per-key order can be checked.
  std::string input;
  std::map<std::string, int> per_key;
  for (int i = 0; i < n; ++i) {
    const std::string key = "k" + std::to_string(i % 10);
    input += key + "\t" + "value-" + std::to_string(per_key[key]++) + "-" + std::string(i % 50, 'x') + "\n";
  }
  std::ofstream(f.tmp().str() + "/input.txt") << input;
  auto r = f.Sh("rdmq-produce -K '\\t' -H source=e2e pipe < '" + f.tmp().str() + "/input.txt'");
  REQUIRE_RUN(r, 0);
  CHECK(r.err.empty());

  // kcat-style format through a pipe into sort: every line back exactly once.
  r = f.Sh("rdmq-consume -e -K '\\t' pipe | sort");
  REQUIRE_RUN(r, 0);
  std::vector<std::string> want;
  std::istringstream in(input);
  for (std::string line; std::getline(in, line);) want.push_back(line);
  std::sort(want.begin(), want.end());
  std::vector<std::string> got;
  std::istringstream out(r.out);
  for (std::string line; std::getline(out, line);) got.push_back(line);
  CHECK(got == want);

  // JSON lines: same key, same partition; per key the counter grows; headers carried.
  r = f.Consume({"--json", "-e", "pipe"});
  REQUIRE_RUN(r, 0);
  std::map<std::string, int> partition_of, next_of;
  std::map<int, int64_t> last_offset;
  int lines = 0;
  std::istringstream js(r.out);
  for (std::string line; std::getline(js, line); ++lines) {
    const json rec = json::parse(line);
    const std::string key = rec["key"];
    const int p = rec["partition"];
    if (!partition_of.count(key)) partition_of[key] = p;
    CHECK(partition_of[key] == p);
    const std::string value = rec["value"];
    CHECK(value.rfind("value-" + std::to_string(next_of[key]++) + "-", 0) == 0);
    REQUIRE(rec["headers"].size() == 1);
    CHECK(rec["headers"][0]["key"] == "source");
    CHECK(rec["headers"][0]["value"] == "e2e");
    if (last_offset.count(p)) CHECK(rec["offset"].get<int64_t>() > last_offset[p]);
    last_offset[p] = rec["offset"];
  }
  CHECK(lines == n);

  // -o -N per partition, -c, -p and a custom format.
  r = f.Consume({"-e", "-p", "1", "-o", "-2", "-f", "%t %p %o %k\\n", "pipe"});
  REQUIRE_RUN(r, 0);
  int in_partition_1 = 0;
  for (const auto& [key, p] : partition_of) in_partition_1 += p == 1 ? per_key[key] : 0;
  std::istringstream tail(r.out);
  int tail_lines = 0;
  for (std::string line; std::getline(tail, line); ++tail_lines) CHECK(line.rfind("pipe 1 ", 0) == 0);
  CHECK(tail_lines == std::min(2, in_partition_1));
  r = f.Consume({"-c", "5", "pipe"});
  REQUIRE_RUN(r, 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 5);
  // A closed output pipe ends the consumer quietly.
  r = f.Sh("rdmq-consume pipe | head -n 3");
  REQUIRE_RUN(r, 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 3);
}

TEST_CASE("rdmq-consume follows the log while rdmq-produce writes", "[e2e][cli]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "live"}), 0);
  // The consumer starts first on the empty topic and waits; the producer is fed through a pipe.
  auto r = f.Sh(
      "rdmq-consume -c 500 live > out.txt & sleep 0.5; seq 1 500 | rdmq-produce live; wait; "
      "cat out.txt",
      120);
  REQUIRE_RUN(r, 0);
  std::string want;
  for (int i = 1; i <= 500; ++i) want += std::to_string(i) + "\n";
  CHECK(r.out == want);
}

TEST_CASE("rdmq-produce reports bad lines and unknown topics", "[e2e][cli]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "kv"}), 0);
  auto r = f.Produce({"-K", ":", "kv"}, "a:1\nnodelimiter\nb:2\n");
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "line 2: no key delimiter ':' in the line"));
  CHECK_FALSE(Contains(r.err, "line 1"));
  r = f.Consume({"-e", "-f", "%k=%s\\n", "kv"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "a=1\nb=2\n");  // the good lines were produced

  r = f.Produce({"missing"}, "x\n");
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "UNKNOWN_TOPIC"));
  r = f.Produce({"-p", "3", "kv"}, "x\n");
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "-p 3 does not exist"));
  r = f.Consume({"-e", "missing"});
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "UNKNOWN_TOPIC"));
  REQUIRE_RUN(f.Produce({"--acks", "2", "kv"}, ""), 2);
  REQUIRE_RUN(f.Produce({"-X", "no.such.setting=1", "kv"}, ""), 2);
  REQUIRE_RUN(f.Consume({"-o", "sometime", "kv"}), 2);
  REQUIRE_RUN(f.Consume({"-f", "%q", "kv"}), 2);
}

TEST_CASE("rdmq-produce: lines pending while the broker stays away fail clearly, and it exits",
          "[e2e][cli]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "gone"}), 0);
  // The first line is stored; the broker stops; the later lines wait for it (the producer
  // reconnects) and fail once delivery.timeout.ms passed without it.
  RunResult r;
  std::thread producing([&] {
    r = f.Sh("(echo a; sleep 4; echo b; echo c) | rdmq-produce -X delivery.timeout.ms=2000 gone", 60);
  });
  bool stored = false;
  for (int i = 0; i < 100 && !stored; ++i) {  // up to ~10 s
    stored = f.Consume({"-e", "gone"}).out == "a\n";
    if (!stored) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(stored);
  f.broker().Stop();
  producing.join();
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "line 2: "));
  CHECK(Contains(r.err, "line 3: "));
  CHECK(Contains(r.err, "not acknowledged within delivery.timeout.ms=2000"));
  CHECK(Contains(r.err, "unreachable"));
  CHECK(Contains(r.err, "1 of 3 records acknowledged, 2 failed"));
}

TEST_CASE("partition inspect on the broker's files reports a flipped bit at its position", "[e2e][cli]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "insp"}), 0);
  std::string input;
  for (int i = 0; i < 2000; ++i) input += "record-" + std::to_string(i) + "\n";
  REQUIRE_RUN(f.Produce({"-X", "batch.size=4096", "insp"}, input), 0);
  const std::string data = f.broker().data_dir();

  auto r = Run({Bin("rdmq"), "partition", "inspect", "--data-dir", data, "insp", "0", "--json"});
  REQUIRE_RUN(r, 0);
  json healthy = ParseJson(r);
  CHECK(healthy["summary"]["records"] == 2000);
  CHECK(healthy["summary"]["problems"] == 0);
  REQUIRE(healthy["segments"].size() >= 1);
  const json& seg = healthy["segments"][0];
  REQUIRE(seg["batches"].size() >= 3);
  CHECK(seg["batches"][0]["leader_epoch"] == -1);  // a broker on its own stamps no leader epoch
  const json& victim = seg["batches"][seg["batches"].size() / 2];
  REQUIRE(f.broker().Stop() == 0);

  // Flip one bit in the middle of that batch's records.
  const std::string file = data + "/topics/insp-0/" + seg["file"].get<std::string>();
  const uint64_t at = victim["file_offset"].get<uint64_t>() + victim["bytes"].get<uint64_t>() / 2;
  {
    const int fd = ::open(file.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    unsigned char b = 0;
    REQUIRE(::pread(fd, &b, 1, static_cast<off_t>(at)) == 1);
    b ^= 0x04;
    REQUIRE(::pwrite(fd, &b, 1, static_cast<off_t>(at)) == 1);
    ::close(fd);
  }
  r = Run({Bin("rdmq"), "partition", "inspect", data + "/topics/insp-0"});
  REQUIRE_RUN(r, 1);
  const std::string where = seg["file"].get<std::string>() + " position " +
                            std::to_string(victim["position"].get<uint64_t>()) + " (file offset " +
                            std::to_string(victim["file_offset"].get<uint64_t>()) + "): CRC mismatch";
  CHECK(Contains(r.out, where));
  CHECK(Contains(r.out, "1 problem"));
  r = Run({Bin("rdmq"), "partition", "inspect", data + "/topics/insp-0", "--json"});
  REQUIRE_RUN(r, 1);
  json bad = ParseJson(r);
  REQUIRE(bad["problems"].size() == 1);
  CHECK(bad["problems"][0]["position"] == victim["position"]);
  CHECK(bad["problems"][0]["file_offset"] == victim["file_offset"]);
  r = Run({Bin("rdmq"), "partition", "inspect", data + "/topics/no-such-0"});
  REQUIRE_RUN(r, 1);
}

TEST_CASE("rdmq-produce -z: compressed batches reach rdmq-consume and the log", "[e2e][cli]") {
  Fixture f;
  std::string input;
  for (int i = 0; i < 3000; ++i)
    input += "event " + std::to_string(i) + " {\"user\": \"u" + std::to_string(i % 7) + "\"}\n";
  for (const std::string codec : {"gzip", "snappy", "lz4", "zstd"}) {
    INFO(codec);
    const std::string topic = "z-" + codec;
    REQUIRE_RUN(f.Rdmq({"topic", "create", topic}), 0);
    // -z, or -X compression.type: the same setting.
    const bool short_form = codec == "gzip" || codec == "lz4";
    auto r = short_form
                 ? f.Produce({"-z", codec, "-X", "batch.size=8192", topic}, input)
                 : f.Produce({"-X", "compression.type=" + codec, "-X", "batch.size=8192", topic}, input);
    REQUIRE_RUN(r, 0);
    r = f.Consume({"-e", topic});
    REQUIRE_RUN(r, 0);
    CHECK(r.out == input);
    r = Run({Bin("rdmq"), "partition", "inspect", "--data-dir", f.broker().data_dir(), topic, "0", "--json"});
    REQUIRE_RUN(r, 0);
    const json j = ParseJson(r);
    CHECK(j["summary"]["records"] == 3000);
    CHECK(j["summary"]["problems"] == 0);
    // Batches of a record or two (sent while nothing was in flight) do not shrink and stay plain.
    uint64_t bytes = 0;
    int compressed = 0;
    for (const json& b : j["segments"][0]["batches"]) {
      if (b["compression"] == codec) {
        ++compressed;
      } else {
        CHECK(b["compression"] == "none");
        CHECK(b["records"] <= 2);
      }
      bytes += b["bytes"].get<uint64_t>();
    }
    CHECK(compressed >= 3);
    CHECK(bytes < input.size() / 2);
  }
  auto r = f.Produce({"-z", "brotli", "z-gzip"}, "x\n");
  REQUIRE_RUN(r, 2);
  CHECK(Contains(r.err, "brotli"));
}

TEST_CASE("rdmq-demo verifies a run and catches missing records", "[e2e][cli]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "demo", "--partitions", "2"}), 0);
  const std::string n = std::to_string(Trials(20000, 2000));
  auto r = f.Sh("rdmq-demo consume -t demo -n " + n +
                " -l 100 > consumer.txt & "
                "rdmq-demo produce -t demo -n " +
                n + " -l 100 -s 64 && wait $! && cat consumer.txt");
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.out, "producer: " + n + " records of 64 B"));
  CHECK(Contains(r.out, "consumer: " + std::to_string(std::stoi(n) + 100) + " of "));
  CHECK(Contains(r.out, "verified: 0 lost, 0 duplicated, 0 corrupt, 0 out of order, 0 unexpected"));

  // Expecting more than was produced: the verifier must fail and say how many are missing.
  r = f.Sh("rdmq-demo consume -t demo -n " + std::to_string(std::stoi(n) + 150) + " -l 0 --idle-timeout 2");
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.out, "verified: 50 lost"));
  // Consuming the same records again: every sequence number arrives a second time.
  r = f.Sh("rdmq-demo consume -t demo -n 10 -l 0 --idle-timeout 2");
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "unexpected sequence"));
}

}  // namespace
}  // namespace rdmq::test
