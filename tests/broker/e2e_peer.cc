// rdmq_e2e_peer: the child processes of the end-to-end tests.
//
//   rdmq_e2e_peer produce BOOTSTRAP TOPIC TAG COUNT [key=value ...]
//       Sends COUNT records (values from MakeValue(TAG, i, size)); prints "ack P O I" for every
//       acknowledged record (partition, offset, index i) and "done" at the end. Keys:
//       partition=N (default -1), keyed=1 (key "k<TAG>-<i>"), min=, max= (value sizes),
//       seed=, and any producer config key (partition.mode, acks, linger.ms, ...).
//   rdmq_e2e_peer group BOOTSTRAP GROUP TOPIC [key=value ...]
//       Joins GROUP subscribed to TOPIC and consumes until killed or SIGTERM: prints
//       "assigned|revoked|lost P..." from the rebalance listener, "rec P O" for each record, and after
//       each CommitSync "committed P POS" for every assigned partition. Keys: sleep.ms= (after each
//       Poll), commit=0 (no CommitSync), and any consumer config key.
//   rdmq_e2e_peer reserve BOOTSTRAP TOPIC PARTITION BYTES
//       Opens a shared lease, reserves BYTES with FETCH_ADD, prints "reserved POS", then sleeps
//       until killed (a producer that dies holding a reservation).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "e2e_values.h"
#include "rdmq/client/connection.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/producer.h"
#include "rdmq/protocol/data_plane.h"

using namespace rdmq;

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: rdmq_e2e_peer produce BOOTSTRAP TOPIC TAG COUNT [k=v...] | reserve BOOTSTRAP TOPIC "
               "PART BYTES\n");
  return 2;
}

int Produce(int argc, char** argv) {
  if (argc < 6) return Usage();
  producer::ProducerConfig cfg;
  cfg.client.bootstrap = argv[2];
  const std::string topic = argv[3];
  const std::string tag = argv[4];
  const long count = std::atol(argv[5]);
  int32_t partition = -1;
  bool keyed = false;
  size_t min = 1, max = 200;
  uint64_t seed = 1;
  for (int i = 6; i < argc; ++i) {
    std::string kv = argv[i];
    const auto eq = kv.find('=');
    if (eq == std::string::npos) return Usage();
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "partition") {
      partition = std::atoi(v.c_str());
    } else if (k == "keyed") {
      keyed = v == "1";
    } else if (k == "min") {
      min = std::stoul(v);
    } else if (k == "max") {
      max = std::stoul(v);
    } else if (k == "seed") {
      seed = std::stoull(v);
    } else if (Status s = cfg.Set(k, v); !s.ok()) {
      std::fprintf(stderr, "peer: %s\n", s.ToString().c_str());
      return 2;
    }
  }
  auto p = producer::Producer::Create(cfg);
  if (!p.ok()) {
    std::fprintf(stderr, "peer: %s\n", p.status().ToString().c_str());
    return 1;
  }
  std::mutex out_mu;
  std::mt19937_64 rng(seed);
  long failed = 0;
  for (long i = 0; i < count; ++i) {
    const size_t size = min + rng() % (max - min + 1);
    const std::string value = test::MakeValue(tag, i, size);
    const std::string key = "k" + tag + "-" + std::to_string(i);
    producer::ProducerRecord r;
    r.topic = topic;
    r.partition = partition;
    if (keyed) r.key = key;
    r.value = value;
    Status s = (*p)->Send(r, [&out_mu, i, &failed](const Result<producer::RecordMetadata>& md) {
      std::lock_guard lock(out_mu);
      if (md.ok()) {
        std::printf("ack %d %lld %ld\n", md->partition, static_cast<long long>(md->offset), i);
      } else {
        ++failed;
        std::printf("fail %ld %s\n", i, md.status().ToString().c_str());
      }
      std::fflush(stdout);
    });
    if (!s.ok()) {
      std::lock_guard lock(out_mu);
      std::printf("fail %ld %s\n", i, s.ToString().c_str());
      std::fflush(stdout);
      ++failed;
      if (failed > 100) break;
    }
  }
  Status s = (*p)->Flush(std::chrono::seconds(60));
  std::lock_guard lock(out_mu);
  std::printf("done %s\n", s.ok() ? "ok" : s.ToString().c_str());
  std::fflush(stdout);
  return s.ok() && failed == 0 ? 0 : 1;
}

volatile std::sig_atomic_t g_stop = 0;

struct PrintingListener : consumer::RebalanceListener {
  static void Print(const char* what, const std::vector<consumer::TopicPartition>& tps) {
    std::printf("%s", what);
    for (const auto& tp : tps) std::printf(" %d", tp.partition);
    std::printf("\n");
    std::fflush(stdout);
  }
  void OnAssigned(const std::vector<consumer::TopicPartition>& tps) override { Print("assigned", tps); }
  void OnRevoked(const std::vector<consumer::TopicPartition>& tps) override { Print("revoked", tps); }
  void OnLost(const std::vector<consumer::TopicPartition>& tps) override { Print("lost", tps); }
};

int Group(int argc, char** argv) {
  if (argc < 5) return Usage();
  consumer::ConsumerConfig cfg;
  cfg.client.bootstrap = argv[2];
  cfg.group_id = argv[3];
  const std::string topic = argv[4];
  int sleep_ms = 0;
  bool commit = true;
  for (int i = 5; i < argc; ++i) {
    std::string kv = argv[i];
    const auto eq = kv.find('=');
    if (eq == std::string::npos) return Usage();
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "sleep.ms") {
      sleep_ms = std::atoi(v.c_str());
    } else if (k == "commit") {
      commit = v == "1";
    } else if (Status s = cfg.Set(k, v); !s.ok()) {
      std::fprintf(stderr, "peer: %s\n", s.ToString().c_str());
      return 2;
    }
  }
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  auto c = consumer::Consumer::Create(cfg);
  if (!c.ok()) {
    std::fprintf(stderr, "peer: %s\n", c.status().ToString().c_str());
    return 1;
  }
  PrintingListener listener;
  if (Status s = (*c)->Subscribe({topic}, &listener); !s.ok()) {
    std::fprintf(stderr, "peer: %s\n", s.ToString().c_str());
    return 1;
  }
  while (g_stop == 0) {
    auto records = (*c)->Poll(std::chrono::milliseconds(100));
    if (!records.ok()) {
      std::printf("error %s\n", records.status().ToString().c_str());
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    for (const auto& r : *records)
      std::printf("rec %d %lld\n", r.partition, static_cast<long long>(r.offset));
    std::fflush(stdout);
    if (commit && !records->empty()) {
      if (Status s = (*c)->CommitSync(); s.ok()) {
        for (const auto& tp : (*c)->Assignment()) {
          auto pos = (*c)->Position(tp);
          if (pos.ok()) std::printf("committed %d %lld\n", tp.partition, static_cast<long long>(*pos));
        }
      } else {
        std::printf("commit-error %s\n", s.ToString().c_str());
      }
      std::fflush(stdout);
    }
    if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
  }
  (*c)->Close();
  std::printf("closed\n");
  std::fflush(stdout);
  return 0;
}

int Reserve(int argc, char** argv) {
  if (argc != 6) return Usage();
  client::ClientOptions co;
  co.bootstrap = argv[2];
  auto conn = client::Connection::Open(co);
  if (!conn.ok()) {
    std::fprintf(stderr, "peer: %s\n", conn.status().ToString().c_str());
    return 1;
  }
  client::Connection& c = **conn;
  auto acks = c.fabric().Allocate(4096, fabric::kLocalWrite | fabric::kRemoteWrite);
  if (!acks.ok()) return 1;
  auto grant = c.data()->GrantAccess(**acks, 0, 64, fabric::kRemoteWrite);
  if (!grant.ok()) return 1;
  protocol::OpenProduceRequest req;
  req.topic = argv[3];
  req.partition = PartitionId(std::atoi(argv[4]));
  req.mode = protocol::ProduceMode::kShared;
  req.ack_region.bytes = (*grant)->descriptor().Encode();
  auto lease = c.Call<protocol::LeaseResponse>(protocol::Api::kOpenProduce, req);
  if (!lease.ok()) {
    std::fprintf(stderr, "peer: %s\n", lease.status().ToString().c_str());
    return 1;
  }
  auto desc = fabric::RegionDescriptor::Decode(std::as_bytes(std::span(lease->segment.region.bytes)));
  if (!desc.ok()) return 1;
  auto remote = c.data()->Attach(*desc);
  if (!remote.ok()) return 1;
  fabric::WorkRequest fa;
  fa.opcode = fabric::Opcode::kFetchAdd;
  fa.local = {(*acks)->data() + 1024, 8, acks->get()};
  fa.remote = remote->get();
  fa.remote_offset = lease->segment.reservation_offset;
  fa.operand = std::stoull(argv[5]);
  if (!c.data()->Post({&fa, 1}).ok()) return 1;
  fabric::Completion wc;
  while (c.send_cq()->Poll({&wc, 1}) == 0) std::this_thread::yield();
  if (wc.status) return 1;
  uint64_t pos;
  std::memcpy(&pos, (*acks)->data() + 1024, 8);
  std::printf("reserved %llu\n", static_cast<unsigned long long>(pos));
  std::fflush(stdout);
  for (;;) pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const std::string mode = argv[1];
  if (mode == "produce") return Produce(argc, argv);
  if (mode == "reserve") return Reserve(argc, argv);
  if (mode == "group") return Group(argc, argv);
  return Usage();
}
