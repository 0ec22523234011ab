// The broker's HTTP endpoint end to end: /healthz, /readyz and /metrics of a broker in this
// process. The per-partition counters match what producers sent; Debian's promtool accepts every
// scrape, also those taken while producers run; a real Prometheus server started here scrapes the
// broker and answers a query for the produced-records counter with the number produced.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "e2e_util.h"
#include "inproc_broker.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/producer.h"
#include "support/http_get.h"
#include "support/test_util.h"

namespace rdmq::broker {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using rdmq::test::SampleValue;

// promtool's verdict on a scrape: "" when it passes, else what it printed.
std::string Promtool(const rdmq::test::TempDir& dir, const std::string& text) {
  const std::string in = (dir / "scrape.txt").string(), out = (dir / "promtool.out").string();
  std::ofstream(in) << text;
  const int rc = std::system(("promtool check metrics < " + in + " > " + out + " 2>&1").c_str());
  std::ifstream f(out);
  const std::string said((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return rc == 0 ? "" : "promtool exit " + std::to_string(rc) + ": " + said;
}

// Runs on threads beside the test's own, so it uses no Catch macros (Catch is not thread-safe):
// it returns what went wrong, and the test thread checks it.
std::string Produce(const client::ClientOptions& c, const std::string& topic, int32_t partition, int n) {
  producer::ProducerConfig pc;
  pc.client = c;
  pc.linger = 1ms;
  auto p = producer::Producer::Create(pc);
  if (!p.ok()) return "create: " + p.status().ToString();
  const std::string value(100, 'v');
  for (int i = 0; i < n; ++i) {
    if (auto s = (*p)->Send({.topic = topic, .partition = partition, .value = value}, nullptr); !s.ok()) {
      return "send: " + s.ToString();
    }
  }
  if (auto s = (*p)->Flush(30s); !s.ok()) return "flush: " + s.ToString();
  if (auto s = (*p)->Close(10s); !s.ok()) return "close: " + s.ToString();
  return "";
}

// A TCP port free on loopback now (for a server that cannot be told to pick one and say which).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  socklen_t len = sizeof sa;
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0);
  close(fd);
  return ntohs(sa.sin_port);
}

}  // namespace

TEST_CASE(
    "/healthz, /readyz and /metrics: counters match what was produced, promtool accepts scrapes under load",
    "[broker][metrics]") {
  rdmq::test::TempDir dir;
  auto r = test::Start(test::TestConfig(dir));
  const std::string http = r.broker->http_address();
  REQUIRE(http.rfind("127.0.0.1:", 0) == 0);
  auto h = rdmq::test::HttpGet(http, "/healthz");
  CHECK(h.status == 200);
  CHECK(h.body == "ok\n");
  CHECK(rdmq::test::HttpGet(http, "/readyz").status == 200);
  CHECK(rdmq::test::HttpGet(http, "/metricz").status == 404);
  REQUIRE_OK(r.admin->CreateTopic("m", {{"partitions", "2"}}));

  // Scrapes while two producers run: each one passes promtool.
  std::atomic<bool> done{false};
  std::string said0, said1;
  std::thread load([&] {
    std::thread other([&] { said1 = Produce(r.client, "m", 1, 1000); });
    said0 = Produce(r.client, "m", 0, 3000);
    other.join();
    done = true;
  });
  int scrapes = 0;
  bool scraped_ok = true;
  while (!done || scrapes < 3) {
    auto m = rdmq::test::HttpGet(http, "/metrics");
    CHECK(m.status == 200);
    CHECK(m.head.find("Content-Type: text/plain; version=0.0.4") != std::string::npos);
    CHECK(Promtool(dir, m.body) == "");
    scraped_ok = scraped_ok && m.status == 200;
    ++scrapes;
  }
  load.join();
  REQUIRE(scraped_ok);
  REQUIRE(said0 == "");
  REQUIRE(said1 == "");

  // A group committed 1000 on partition 0: its lag is the rest.
  consumer::ConsumerConfig cc;
  cc.client = r.client;
  cc.group_id = "g";
  auto con = consumer::Consumer::Create(cc);
  REQUIRE_OK(con);
  REQUIRE_OK((*con)->Assign({{"m", 0}}));
  REQUIRE_OK((*con)->CommitSync({{{"m", 0}, {1000, ""}}}));

  const std::string text = rdmq::test::HttpGet(http, "/metrics").body;
  CHECK(Promtool(dir, text) == "");
  CHECK(SampleValue(text, "rdmq_partition_records_in_total{topic=\"m\",partition=\"0\"}") == 3000);
  CHECK(SampleValue(text, "rdmq_partition_records_in_total{topic=\"m\",partition=\"1\"}") == 1000);
  CHECK(SampleValue(text, "rdmq_partition_high_watermark{topic=\"m\",partition=\"0\"}") == 3000);
  // Each record's 100 value bytes, plus the batch and record headers.
  const double in0 = SampleValue(text, "rdmq_partition_bytes_in_total{topic=\"m\",partition=\"0\"}");
  CHECK(in0 > 3000 * 100);
  CHECK(in0 < 3000 * 200);
  CHECK(SampleValue(text, "rdmq_partition_size_bytes{topic=\"m\",partition=\"0\"}") == in0);
  CHECK(SampleValue(text, "rdmq_group_committed_offset{group=\"g\",topic=\"m\",partition=\"0\"}") == 1000);
  CHECK(SampleValue(text, "rdmq_group_lag{group=\"g\",topic=\"m\",partition=\"0\"}") == 2000);
  CHECK(SampleValue(text, "rdmq_partitions") == 2);
  CHECK(SampleValue(text, "rdmq_broker_ready") == 1);
  CHECK(SampleValue(text, "rdmq_commits_total") > 0);
  const double commits = SampleValue(text, "rdmq_commit_duration_seconds_count{path=\"data\"}") +
                         SampleValue(text, "rdmq_commit_duration_seconds_count{path=\"rpc\"}");
  CHECK(commits > 0);
  CHECK(SampleValue(text, "rdmq_rpc_requests_total") > 0);
  CHECK(SampleValue(text, "process_resident_memory_bytes") > 0);
  (*con)->Close();
}

TEST_CASE("a real Prometheus server scrapes the broker and counts the records produced",
          "[broker][metrics]") {
  rdmq::test::TempDir dir;
  auto r = test::Start(test::TestConfig(dir));
  REQUIRE_OK(r.admin->CreateTopic("p", {{"partitions", "1"}}));
  REQUIRE(Produce(r.client, "p", 0, 1234) == "");

  const int port = FreePort();
  {
    std::ofstream cfg(dir / "prometheus.yml");
    cfg << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        << "scrape_configs:\n  - job_name: rdmq\n    static_configs:\n      - targets: ['"
        << r.broker->http_address() << "']\n";
  }
  rdmq::test::Child prom;
  prom.Start({"/usr/bin/prometheus", "--config.file=" + (dir / "prometheus.yml").string(),
              "--storage.tsdb.path=" + (dir / "tsdb").string(),
              "--web.listen-address=127.0.0.1:" + std::to_string(port)},
             (dir / "prometheus.log").string());
  const std::string api = "127.0.0.1:" + std::to_string(port);
  double got = -1;
  const auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline && prom.running()) {
    auto a =
        rdmq::test::HttpGet(api, "/api/v1/query?query=rdmq_partition_records_in_total%7Btopic%3D%22p%22%7D");
    if (a.status == 200) {
      auto j = nlohmann::json::parse(a.body, nullptr, false);
      if (!j.is_discarded() && j["status"] == "success" && !j["data"]["result"].empty()) {
        got = std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
        if (got == 1234) break;
      }
    }
    std::this_thread::sleep_for(250ms);
  }
  std::ifstream log(dir / "prometheus.log");
  const std::string said((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  INFO("prometheus log: " << said.substr(said.size() > 3000 ? said.size() - 3000 : 0));
  CHECK(got == 1234);
  prom.Kill(SIGTERM);
}

}  // namespace rdmq::broker
