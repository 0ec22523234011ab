// Built against an installed rdmq (find_package): creates a topic, produces N records and reads
// them back. Prints "roundtrip: N records" and exits 0 when every record came back in order.
//   roundtrip BOOTSTRAP TOPIC N
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rdmq/client/admin.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/producer.h"

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc != 4) {
    std::fprintf(stderr, "usage: roundtrip BOOTSTRAP TOPIC N\n");
    return 2;
  }
  rdmq::client::ClientOptions c;
  c.bootstrap = argv[1];
  const std::string topic = argv[2];
  const int n = std::atoi(argv[3]);
  auto admin = rdmq::client::AdminClient::Connect(c);
  if (!admin.ok()) return std::fprintf(stderr, "connect: %s\n", admin.status().ToString().c_str()), 1;
  if (auto t = (*admin)->CreateTopic(topic, {{"partitions", "1"}}); !t.ok()) {
    return std::fprintf(stderr, "create topic: %s\n", t.status().ToString().c_str()), 1;
  }
  rdmq::producer::ProducerConfig pc;
  pc.client = c;
  auto p = rdmq::producer::Producer::Create(pc);
  if (!p.ok()) return std::fprintf(stderr, "producer: %s\n", p.status().ToString().c_str()), 1;
  for (int i = 0; i < n; ++i) {
    const std::string v = "record-" + std::to_string(i);
    if (auto s = (*p)->Send({.topic = topic, .partition = 0, .value = v}, nullptr); !s.ok()) {
      return std::fprintf(stderr, "send: %s\n", s.ToString().c_str()), 1;
    }
  }
  if (auto s = (*p)->Flush(30s); !s.ok()) return std::fprintf(stderr, "flush: %s\n", s.ToString().c_str()), 1;
  (void)(*p)->Close(10s);

  rdmq::consumer::ConsumerConfig cc;
  cc.client = c;
  auto con = rdmq::consumer::Consumer::Create(cc);
  if (!con.ok()) return std::fprintf(stderr, "consumer: %s\n", con.status().ToString().c_str()), 1;
  (void)(*con)->Assign({{topic, 0}});
  int next = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (next < n && std::chrono::steady_clock::now() < deadline) {
    auto recs = (*con)->Poll(100ms);
    if (!recs.ok()) return std::fprintf(stderr, "poll: %s\n", recs.status().ToString().c_str()), 1;
    for (const auto& r : *recs) {
      if (r.offset != next || r.value != "record-" + std::to_string(next)) {
        return std::fprintf(stderr, "record %d: wrong offset or value\n", next), 1;
      }
      ++next;
    }
  }
  (void)(*con)->Close();
  std::printf("roundtrip: %d records\n", next);
  return next == n ? 0 : 1;
}
