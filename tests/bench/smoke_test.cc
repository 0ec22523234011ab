// Smoke tests of the rdmq-bench binary: short runs that must complete with the right counts.
// They assert nothing about speed.
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "rdmq/bench/report.h"
#include "support/test_util.h"

using namespace rdmq;
using namespace rdmq::bench;

namespace {

std::string BenchBinary() {
  const char* dir = std::getenv("RDMQ_TEST_BIN_DIR");
  return std::string(dir ? dir : "build/release/bin") + "/rdmq-bench";
}

// Runs a shell command; returns its exit status and what it printed.
int Run(const std::string& cmd, std::string* output) {
  std::FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[1024];
  output->clear();
  while (std::fgets(buf, sizeof(buf), p) != nullptr) *output += buf;
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool HaveBinary() {
  std::ifstream f(BenchBinary());
  return f.good();
}

// `readers`: how many consumers read each record (fan-out), 1 otherwise.
void CheckCounts(const nlohmann::json& j, uint64_t records, uint64_t readers = 1) {
  INFO(j.dump(2).substr(0, 3000));
  CHECK(j["ok"] == true);
  CHECK(j["counts"]["sent"] == records);
  CHECK(j["counts"]["acked"] == records);
  CHECK(j["counts"]["consumed"] == records * readers);
  CHECK(j["counts"]["missing"] == 0);
  CHECK(j["counts"]["duplicates"] == 0);
  // Latencies of every record, or of about 1 in sample_every (pseudo-random: allow 2x).
  const uint64_t every = j["latency_ns"]["sample_every"].get<uint64_t>();
  const uint64_t timed = j["latency_ns"]["ack"]["count"].get<uint64_t>();
  if (every == 1) {
    CHECK(timed == records);
  } else {
    CHECK(timed >= records / every / 2);
    CHECK(timed <= records / every * 2);
  }
  CHECK(j["latency_ns"]["e2e"]["count"] == timed * readers);
  CHECK(j["timeline"].size() > 0);
}

}  // namespace

TEST_CASE("rdmq-bench mem run with threads: counts, JSON and plot", "[bench][smoke]") {
  if (!HaveBinary()) RDMQ_SKIP("rdmq-bench is not built at " + BenchBinary());
  rdmq::test::TempDir dir;
  const std::string json = (dir / "r.json").string(), png = (dir / "r.png").string();
  std::string out;
  const int rc = Run(
      BenchBinary() + " run --system mem -p 2 -c 2 --partitions 4 -n 20000 -s 100 --progress plain --json " +
          json + " --plot " + png,
      &out);
  INFO(out);
  // Without gnuplot the plot step fails (exit 1) after writing the JSON; the counts still count.
  const bool have_gnuplot = std::system("command -v gnuplot >/dev/null 2>&1") == 0;
  REQUIRE(rc == (have_gnuplot ? 0 : 1));
  CHECK(out.find("check      OK") != std::string::npos);
  CHECK(out.find("sampled    latencies of 1 record in 16") != std::string::npos);  // window 1024
  Result<nlohmann::json> j = ReadJson(json);
  REQUIRE_OK(j);
  CheckCounts(*j, 40000);
  if (have_gnuplot) {
    std::ifstream f(png, std::ios::binary);
    char magic[8] = {};
    f.read(magic, 8);
    CHECK(std::string(magic + 1, 3) == "PNG");
  }
}

TEST_CASE("rdmq-bench mem run with processes, one record in flight", "[bench][smoke]") {
  if (!HaveBinary()) RDMQ_SKIP("rdmq-bench is not built at " + BenchBinary());
  rdmq::test::TempDir dir;
  const std::string json = (dir / "r.json").string();
  std::string out;
  const int rc =
      Run(BenchBinary() +
              " --system mem --procs -p 2 -c 1 --partitions 2 -n 5000 -w 1 --progress none --json " + json,
          &out);
  INFO(out);
  REQUIRE(rc == 0);
  Result<nlohmann::json> j = ReadJson(json);
  REQUIRE_OK(j);
  CheckCounts(*j, 10000);
  CHECK((*j)["workload"]["processes"] == true);
}

bool HaveBroker() {
  std::ifstream f(BenchBinary().substr(0, BenchBinary().rfind('/')) + "/rdmq-broker");
  return f.good();
}

// rdmq-bench against a broker it starts itself (data in dir/broker) with `args`: exits 0 and
// every one of `records` went through. The result's JSON.
nlohmann::json RunWithBroker(const rdmq::test::TempDir& dir, const std::string& system,
                             const std::string& args, uint64_t records, uint64_t readers = 1) {
  const std::string json = (dir / "r.json").string();
  std::string out;
  const int rc = Run(BenchBinary() + " --system " + system + " --start-broker --broker-dir " +
                         (dir / "broker").string() + " " + args + " --json " + json,
                     &out);
  INFO(out);
  REQUIRE(rc == 0);
  Result<nlohmann::json> j = ReadJson(json);
  REQUIRE_OK(j);
  CheckCounts(*j, records, readers);
  return *j;
}

TEST_CASE("rdmq-bench rdmq --fanout: every consumer reads the whole log, each with its own rate",
          "[bench][smoke]") {
  if (!HaveBinary() || !HaveBroker())
    RDMQ_SKIP("rdmq-bench or rdmq-broker is not built beside " + BenchBinary());
  rdmq::test::TempDir dir;
  // Three consumers on two partitions: more consumers than partitions, which only fan-out allows.
  const nlohmann::json j = RunWithBroker(
      dir, "rdmq", "--procs -p 2 -c 3 --partitions 2 --fanout -n 10000 -s 100 --progress none", 20000, 3);
  CHECK(j["workload"]["fanout"] == true);
  const auto& rates = j["consume"]["per_consumer_records_per_s"];
  REQUIRE(rates.size() == 3);
  for (const auto& r : rates) CHECK(r.get<double>() > 0);
  // The consumers began once everything was written: their reading took less than the whole run.
  CHECK(j["consume"]["seconds"].get<double>() > 0);
}

TEST_CASE("rdmq-bench rdmq run against its own broker: threads, exclusive producers", "[bench][smoke]") {
  if (!HaveBinary() || !HaveBroker())
    RDMQ_SKIP("rdmq-bench or rdmq-broker is not built beside " + BenchBinary());
  rdmq::test::TempDir dir;
  const nlohmann::json j =
      RunWithBroker(dir, "rdmq", "-p 2 -c 2 --partitions 2 -n 20000 -s 100 --progress plain --vs-mem", 40000);
  CHECK(j["cpu"]["server"].is_object());  // the broker's CPU time was read
  // --vs-mem: mem ran the same workload after it, and the fractions compare the two.
  const double mem_rate = j["vs_mem"]["produce_records_per_s"].get<double>();
  CHECK(mem_rate > 0);
  CHECK(j["vs_mem"]["produce_fraction"].get<double>() ==
        Approx(j["produce"]["records_per_s"].get<double>() / mem_rate));
  CHECK(j["vs_mem"]["consume_fraction"].get<double>() > 0);
}

TEST_CASE("rdmq-bench rdmq run: processes, one record in flight", "[bench][smoke]") {
  if (!HaveBinary() || !HaveBroker())
    RDMQ_SKIP("rdmq-bench or rdmq-broker is not built beside " + BenchBinary());
  rdmq::test::TempDir dir;
  RunWithBroker(dir, "rdmq",
                "--procs -p 2 -c 1 --partitions 2 --durability visibility -n 3000 -w 1 --progress none",
                6000);
}

TEST_CASE("rdmq-bench kafka run through rdmq's Kafka listener, broker started for it", "[bench][smoke]") {
  if (!HaveBinary() || !HaveBroker())
    RDMQ_SKIP("rdmq-bench or rdmq-broker is not built beside " + BenchBinary());
  rdmq::test::TempDir dir;
  // Two partitions, so records of both reach one consumer through one librdkafka queue.
  const nlohmann::json j = RunWithBroker(
      dir, "kafka", "-p 1 -c 1 --partitions 2 -n 5000 -s 100 --linger-ms 1 --progress plain", 5000);
  CHECK(j["cpu"]["server"].is_object());  // the broker's CPU time was read
  CHECK(j["system"] == "kafka");
  CHECK(j["description"].get<std::string>().find("Kafka listener") != std::string::npos);
}

TEST_CASE("rdmq-bench kafka: a property librdkafka rejects fails the run and names it", "[bench][smoke]") {
  if (!HaveBinary() || !HaveBroker())
    RDMQ_SKIP("rdmq-bench or rdmq-broker is not built beside " + BenchBinary());
  rdmq::test::TempDir dir;
  std::string out;
  CHECK(Run(BenchBinary() + " --system kafka --start-broker --broker-dir " + (dir / "broker").string() +
                " -n 10 --progress none --producer-set no.such.property=1",
            &out) == 1);
  CHECK(out.find("no.such.property") != std::string::npos);
}

TEST_CASE("rdmq-bench rdmq: an unreachable broker fails the run with exit status 1", "[bench][smoke]") {
  if (!HaveBinary()) RDMQ_SKIP("rdmq-bench is not built at " + BenchBinary());
  rdmq::test::TempDir dir;
  std::string out;
  CHECK(Run(BenchBinary() + " --system rdmq --address unix:" + (dir / "nobody.sock").string() +
                " -n 10 --progress none",
            &out) == 1);
  CHECK(out.find("set up rdmq") != std::string::npos);
}

TEST_CASE("rdmq-bench limits and table", "[bench][smoke]") {
  if (!HaveBinary()) RDMQ_SKIP("rdmq-bench is not built at " + BenchBinary());
  rdmq::test::TempDir dir;
  std::string out;
  const std::string limits = (dir / "limits.json").string();
  REQUIRE(Run(BenchBinary() + " limits --quick --json " + limits, &out) == 0);
  INFO(out);
  Result<nlohmann::json> l = ReadJson(limits);
  REQUIRE_OK(l);
  CHECK((*l)["memcpy_1mib_gb_s"].get<double>() > 0);
  CHECK((*l)["memcpy_64mib_gb_s"].get<double>() > 0);
  CHECK((*l)["tcp_loopback_gb_s"].get<double>() > 0);
  CHECK((*l)["tcp_rtt_100b_ns"]["count"].get<uint64_t>() > 0);
  CHECK((*l)["msync_100b_ns"]["count"].get<uint64_t>() == 200);  // --quick: 200 commits, each timed
  CHECK((*l)["msync_100b_ns"]["p50"].get<uint64_t>() > 0);
  CHECK((*l)["msync_1mib_gb_s"].get<double>() > 0);
  CHECK((*l)["fresh_pages_bytes"].get<uint64_t>() == uint64_t{16} << 20);  // --quick: a 16 MiB file
  CHECK((*l)["fresh_pages_gb_s"].get<double>() > 0);
  CHECK((*l)["fresh_pages_worst_1mib_ms"].get<double>() > 0);
  CHECK(!(*l)["msync_dir_fs"].get<std::string>().empty());
  CHECK((*l)["read_ahead_kb"].get<int64_t>() >= -1);
  // The msync limit in a chosen directory, and a clear error for one that is not there.
  REQUIRE(Run(BenchBinary() + " limits --quick --dir " + dir.path().string(), &out) == 0);
  CHECK(out.find("commits in " + dir.path().string()) != std::string::npos);
  CHECK(out.find("data directory      " + dir.path().string() + " (") != std::string::npos);
  // A tmpfs directory is named as one, with no block device to read ahead from.
  struct statfs shm {};
  if (statfs("/dev/shm", &shm) == 0 && static_cast<unsigned long>(shm.f_type) == TMPFS_MAGIC) {
    REQUIRE(Run(BenchBinary() + " limits --quick --dir /dev/shm", &out) == 0);
    CHECK(out.find("/dev/shm (tmpfs, no block device)") != std::string::npos);
  }
  CHECK(Run(BenchBinary() + " limits --quick --dir " + (dir / "missing").string(), &out) == 1);
  CHECK(out.find("for the msync limit") != std::string::npos);

  const std::string a = (dir / "a.json").string(), b = (dir / "b.json").string();
  REQUIRE(Run(BenchBinary() + " --system mem -n 3000 --progress none --json " + a, &out) == 0);
  REQUIRE(Run(BenchBinary() + " --system mem -n 3000 -w 1 --progress none --json " + b, &out) == 0);
  REQUIRE(Run(BenchBinary() + " table --reference mem " + a + " " + b, &out) == 0);
  CHECK(out.find("reference") != std::string::npos);
  REQUIRE(Run(BenchBinary() + " table --markdown " + a, &out) == 0);
  CHECK(out.find("| system |") != std::string::npos);
}

TEST_CASE("rdmq-bench rejects bad options with exit status 2", "[bench][smoke]") {
  if (!HaveBinary()) RDMQ_SKIP("rdmq-bench is not built at " + BenchBinary());
  std::string out;
  CHECK(Run(BenchBinary() + " --system nosuch -n 10", &out) == 2);
  CHECK(out.find("--system nosuch: must be mem, rdmq, redis, nats or kafka") != std::string::npos);
  CHECK(Run(BenchBinary() + " --size 8 -n 10", &out) == 2);
  CHECK(out.find("--size 8: must be a byte count") != std::string::npos);
  CHECK(Run(BenchBinary() + " --linger-ms soon -n 10", &out) == 2);
  CHECK(out.find("--linger-ms soon") != std::string::npos);
  CHECK(Run(BenchBinary() + " --count 10 --duration 1", &out) == 2);
  CHECK(Run(BenchBinary() + " --no-such-option", &out) == 2);
  CHECK(Run(BenchBinary() + " frobnicate", &out) == 2);
  CHECK(Run(BenchBinary() + " table /nonexistent/x.json", &out) == 1);
  CHECK(out.find("/nonexistent/x.json") != std::string::npos);
}
