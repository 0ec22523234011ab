// A small program on librdkafka's C++ API (Debian's librdkafka-dev) that the Kafka e2e tests run
// as a separate process against rdmq's Kafka listener:
//
//   rdkafka_peer produce BOOTSTRAP TOPIC COUNT KEYS
//       an idempotent producer (enable.idempotence=true, acks=all) sending COUNT records, keyed
//       k0..k<KEYS-1> round robin, values "<key>#<n>" (n counts per key); waits for every
//       delivery report; prints "delivered D failed F" and exits 0 only if F is 0.
//   rdkafka_peer consume BOOTSTRAP TOPIC GROUP IDLE_S
//       a consumer group member (enable.auto.commit=false) that commits every record
//       synchronously after reading it and prints "<partition> <offset> <key> <value> C|F": C when
//       the commit succeeded, F when it failed (its outcome is unknown: the broker may have
//       stored it before it died); after F the record is read again (seek back). Exits after
//       IDLE_S seconds without a record, or on SIGTERM.
//
// $RDKAFKA_PEER_CONFIG adds client settings to either, "key=value;key=value" (the security
// settings of a test: security.protocol, sasl.*, ssl.*).
//
// Written against the documented RdKafka:: API only; every error goes to stderr.
#include <librdkafka/rdkafkacpp.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop = true; }

std::unique_ptr<RdKafka::Conf> Config(std::map<std::string, std::string> kv) {
  std::unique_ptr<RdKafka::Conf> c(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  if (const char* extra = std::getenv("RDKAFKA_PEER_CONFIG"); extra != nullptr) {
    std::string rest = extra;
    while (!rest.empty()) {
      const size_t semi = rest.find(';');
      const std::string item = rest.substr(0, semi);
      rest = semi == std::string::npos ? "" : rest.substr(semi + 1);
      const size_t eq = item.find('=');
      if (eq != std::string::npos) kv[item.substr(0, eq)] = item.substr(eq + 1);
    }
  }
  for (const auto& [k, v] : kv) {
    if (c->set(k, v, err) != RdKafka::Conf::CONF_OK) {
      std::cerr << "config " << k << "=" << v << ": " << err << "\n";
      std::exit(2);
    }
  }
  return c;
}

class Reports : public RdKafka::DeliveryReportCb {
 public:
  void dr_cb(RdKafka::Message& m) override {
    if (m.err() == RdKafka::ERR_NO_ERROR) {
      ++delivered;
    } else {
      if (failed++ < 5) std::cerr << "delivery failed: " << m.errstr() << "\n";
    }
  }
  std::atomic<long> delivered{0};
  std::atomic<long> failed{0};
};

int Produce(const std::string& bootstrap, const std::string& topic, long count, int keys) {
  Reports reports;
  auto conf = Config({{"bootstrap.servers", bootstrap},
                      {"enable.idempotence", "true"},
                      {"acks", "all"},
                      {"linger.ms", "2"},
                      {"message.timeout.ms", "120000"},
                      {"reconnect.backoff.ms", "20"},
                      {"reconnect.backoff.max.ms", "500"}});
  std::string err;
  if (conf->set("dr_cb", &reports, err) != RdKafka::Conf::CONF_OK) {
    std::cerr << err << "\n";
    return 2;
  }
  std::unique_ptr<RdKafka::Producer> p(RdKafka::Producer::create(conf.get(), err));
  if (!p) {
    std::cerr << "producer: " << err << "\n";
    return 2;
  }
  std::vector<long> seq(static_cast<size_t>(keys), 0);
  for (long i = 0; i < count && !g_stop; ++i) {
    const int k = static_cast<int>(i % keys);
    const std::string key = "k" + std::to_string(k);
    const std::string value = key + "#" + std::to_string(seq[static_cast<size_t>(k)]++);
    while (true) {
      const RdKafka::ErrorCode e =
          p->produce(topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY,
                     const_cast<char*>(value.data()), value.size(), key.data(), key.size(), 0, nullptr);
      if (e == RdKafka::ERR_NO_ERROR) break;
      if (e != RdKafka::ERR__QUEUE_FULL) {
        std::cerr << "produce: " << RdKafka::err2str(e) << "\n";
        return 1;
      }
      p->poll(10);
    }
    if (i % 50 == 0) {
      p->poll(0);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // spread over the restarts
    }
  }
  const RdKafka::ErrorCode f = p->flush(150000);
  std::cout << "delivered " << reports.delivered << " failed " << reports.failed << "\n";
  if (f != RdKafka::ERR_NO_ERROR) std::cerr << "flush: " << RdKafka::err2str(f) << "\n";
  return reports.failed == 0 && f == RdKafka::ERR_NO_ERROR && reports.delivered == count ? 0 : 1;
}

int Consume(const std::string& bootstrap, const std::string& topic, const std::string& group, int idle_s) {
  auto conf = Config({{"bootstrap.servers", bootstrap},
                      {"group.id", group},
                      {"enable.auto.commit", "false"},
                      {"auto.offset.reset", "earliest"},
                      {"session.timeout.ms", "6000"},
                      {"heartbeat.interval.ms", "500"},
                      {"reconnect.backoff.ms", "20"},
                      {"reconnect.backoff.max.ms", "500"}});
  std::string err;
  std::unique_ptr<RdKafka::KafkaConsumer> c(RdKafka::KafkaConsumer::create(conf.get(), err));
  if (!c) {
    std::cerr << "consumer: " << err << "\n";
    return 2;
  }
  if (RdKafka::ErrorCode e = c->subscribe({topic}); e != RdKafka::ERR_NO_ERROR) {
    std::cerr << "subscribe: " << RdKafka::err2str(e) << "\n";
    return 2;
  }
  auto last = std::chrono::steady_clock::now();
  long commit_failures = 0;
  while (!g_stop && std::chrono::steady_clock::now() - last < std::chrono::seconds(idle_s)) {
    std::unique_ptr<RdKafka::Message> m(c->consume(200));
    if (m->err() == RdKafka::ERR__TIMED_OUT || m->err() == RdKafka::ERR__PARTITION_EOF) continue;
    if (m->err() != RdKafka::ERR_NO_ERROR) {
      std::cerr << "consume: " << m->errstr() << "\n";
      continue;
    }
    last = std::chrono::steady_clock::now();
    std::vector<RdKafka::TopicPartition*> at = {
        RdKafka::TopicPartition::create(m->topic_name(), m->partition(), m->offset() + 1)};
    const RdKafka::ErrorCode e = c->commitSync(at);
    const RdKafka::ErrorCode pe = at[0]->err();
    RdKafka::TopicPartition::destroy(at);
    const bool ok = e == RdKafka::ERR_NO_ERROR && pe == RdKafka::ERR_NO_ERROR;
    std::cout << m->partition() << " " << m->offset() << " " << (m->key() ? *m->key() : std::string("-"))
              << " " << std::string(static_cast<const char*>(m->payload()), m->len()) << " "
              << (ok ? "C" : "F") << "\n"
              << std::flush;
    if (ok) continue;
    // Not known to be committed: read it again (if the partition stays ours; otherwise its next
    // owner reads it from the last committed offset).
    if (commit_failures++ < 20)
      std::cerr << "commit failed: " << RdKafka::err2str(e != RdKafka::ERR_NO_ERROR ? e : pe) << "\n";
    std::unique_ptr<RdKafka::TopicPartition> back(
        RdKafka::TopicPartition::create(m->topic_name(), m->partition(), m->offset()));
    (void)c->seek(*back, 2000);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  c->close();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  const std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() == 5 && a[0] == "produce") return Produce(a[1], a[2], std::stol(a[3]), std::stoi(a[4]));
  if (a.size() == 5 && a[0] == "consume") return Consume(a[1], a[2], a[3], std::stoi(a[4]));
  std::cerr
      << "usage: rdkafka_peer produce BOOTSTRAP TOPIC COUNT KEYS | consume BOOTSTRAP TOPIC GROUP IDLE_S\n";
  return 2;
}
