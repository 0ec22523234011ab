// "rdmq": rdmq itself through its C++ clients (rdmq::producer, rdmq::consumer, rdmq::client).
// Setup recreates the topic with the workload's partitions and durability through the
// AdminClient. Producers send each record to its partition and keep its SendFuture in a ring
// of the records in flight; polling waits on the oldest future, which makes the producer poll
// its data endpoint in the calling thread (no hand-off to its I/O thread for the ack).
// Consumers are assigned their partitions from the beginning and poll; on shm they parse the
// log in place.
// With --start-broker (Workload::start_broker) the backend starts `rdmq-broker` itself (the one
// beside rdmq-bench) on a fresh data directory, and stops it in Cleanup; every client reads
// the broker's address from <data dir>/rdmq.addr, which the broker writes once it serves.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "rdmq/bench/system.h"
#include "rdmq/client/admin.h"
#include "rdmq/common/clock.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/producer.h"

namespace rdmq::bench {
namespace {

using namespace std::chrono_literals;

class RdmqProducer final : public ProducerClient {
 public:
  RdmqProducer(const Workload& w, AckSink* sink) : topic_(w.topic), sink_(sink), ring_(w.window + 1) {}

  Status Open(const producer::ProducerConfig& cfg) {
    RDMQ_ASSIGN_OR_RETURN(producer_, producer::Producer::Create(cfg));
    return Status::Ok();
  }

  Status Send(int partition, std::span<const std::byte> payload, uint64_t tag) override {
    if (count_ == ring_.size()) RDMQ_RETURN_IF_ERROR(Poll(std::chrono::seconds(120)));  // driver keeps below
    producer::ProducerRecord r;
    r.topic = topic_;
    r.partition = partition;
    r.value = std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size());
    producer::SendFuture f = producer_->Send(r);
    if (!f.valid()) return Status(Errc::kInternal, "rdmq: Send returned no future");
    Slot& slot = ring_[(head_ + count_) % ring_.size()];
    slot.future = std::move(f);
    slot.tag = tag;
    ++count_;
    return Status::Ok();
  }

  // Delivers the acknowledged records at the front; when there are none, waits on the oldest
  // record's future, which drives the producer's progress in this thread (it polls the data
  // endpoint itself, spinning briefly before it sleeps), so an ack is seen without a thread
  // hand-off.
  Status Poll(std::chrono::microseconds timeout) override {
    if (DeliverReady() != 0 || count_ == 0 || timeout.count() == 0) return Status::Ok();
    ring_[head_].future.wait_for(timeout);
    DeliverReady();
    return Status::Ok();
  }

  Status Flush(std::chrono::milliseconds timeout) override {
    Status s = producer_->Flush(timeout);
    const uint64_t deadline = MonoNanos() + static_cast<uint64_t>(std::chrono::nanoseconds(timeout).count());
    while (count_ != 0 && MonoNanos() < deadline) RDMQ_RETURN_IF_ERROR(Poll(std::chrono::milliseconds(10)));
    if (!s.ok()) return s;
    if (count_ != 0)
      return Status(Errc::kTimeout, "rdmq: " + std::to_string(count_) + " records unacknowledged");
    return Status::Ok();
  }

  ~RdmqProducer() override {
    if (producer_) (void)producer_->Close(5000ms);
  }

 private:
  struct Slot {
    producer::SendFuture future;
    uint64_t tag = 0;
  };

  // Acks complete in order within a partition; the front is checked, so a later partition's
  // ack waits behind an earlier partition's (at most one batch).
  size_t DeliverReady() {
    size_t n = 0;
    while (count_ != 0 && ring_[head_].future.ready()) {
      Slot& slot = ring_[head_];
      const Result<producer::RecordMetadata> md = slot.future.get();
      sink_->OnAck(slot.tag, md.status());
      slot.future = producer::SendFuture();
      head_ = (head_ + 1) % ring_.size();
      --count_;
      ++n;
    }
    return n;
  }

  std::string topic_;
  AckSink* sink_;
  std::vector<Slot> ring_;  // records in flight, oldest at head_
  size_t head_ = 0;
  size_t count_ = 0;
  std::unique_ptr<producer::Producer> producer_;  // last: closed first
};

class RdmqConsumer final : public ConsumerClient {
 public:
  explicit RdmqConsumer(RecordSink* sink) : sink_(sink) {}

  Status Open(const consumer::ConsumerConfig& cfg, const std::string& topic,
              const std::vector<int>& partitions) {
    RDMQ_ASSIGN_OR_RETURN(consumer_, consumer::Consumer::Create(cfg));
    std::vector<client::TopicPartition> tps;
    tps.reserve(partitions.size());
    for (int p : partitions) tps.push_back({topic, p});
    RDMQ_RETURN_IF_ERROR(consumer_->Assign(tps));
    return consumer_->SeekToBeginning(tps);
  }

  Status Poll(std::chrono::milliseconds timeout) override {
    RDMQ_ASSIGN_OR_RETURN(std::vector<consumer::ConsumerRecord> records, consumer_->Poll(timeout));
    // Hand runs of records of one partition to the sink at once.
    size_t i = 0;
    while (i < records.size()) {
      const int partition = records[i].partition;
      views_.clear();
      for (; i < records.size() && records[i].partition == partition; ++i) {
        const std::string_view v = records[i].value.value_or(std::string_view());
        views_.emplace_back(reinterpret_cast<const std::byte*>(v.data()), v.size());
      }
      sink_->OnRecords(partition, views_);
    }
    return Status::Ok();
  }

  ~RdmqConsumer() override {
    if (consumer_) consumer_->Close();
  }

 private:
  RecordSink* sink_;
  std::vector<std::span<const std::byte>> views_;
  std::unique_ptr<consumer::Consumer> consumer_;
};

class RdmqSystem final : public System {
 public:
  explicit RdmqSystem(const Workload& w) : w_(w) {
    if (w_.start_broker) {
      // Decided before the driver forks its workers: they find the broker through this
      // directory's rdmq.addr.
      data_dir_ = w_.broker_dir.empty() ? std::filesystem::temp_directory_path() /
                                              ("rdmq-bench-broker-" + std::to_string(getpid()))
                                        : std::filesystem::path(w_.broker_dir);
    }
  }
  ~RdmqSystem() override { StopBroker(); }

  std::string Describe() const override {
    return "rdmq, fabric " + w_.fabric + ", topic durability " + w_.durability + ", " + w_.mode +
           " producers" + (broker_pid_ != 0 ? ", broker started by rdmq-bench" : "");
  }
  int ServerPid() const override { return broker_pid_; }

  Status Setup() override {
    if (w_.start_broker) RDMQ_RETURN_IF_ERROR(StartBroker());
    client::ClientOptions opts = ClientOptions();
    RDMQ_ASSIGN_OR_RETURN(auto admin, client::AdminClient::Connect(opts));
    (void)admin->DeleteTopic(w_.topic);  // a leftover of an earlier run; absent is fine
    RDMQ_ASSIGN_OR_RETURN(auto created,
                          admin->CreateTopic(w_.topic, {{"partitions", std::to_string(w_.partitions)},
                                                        {"durability", w_.durability}}));
    (void)created;
    return Status::Ok();
  }

  Result<std::unique_ptr<ProducerClient>> OpenProducer(int index, AckSink* sink) override {
    producer::ProducerConfig cfg;
    cfg.client = ClientOptions();
    cfg.client.client_name = "rdmq-bench-producer-" + std::to_string(index);
    cfg.batch_size = w_.batch_size;
    cfg.linger = w_.linger;
    cfg.acks = w_.acks;
    cfg.mode = w_.mode == "shared" ? producer::PartitionMode::kShared : producer::PartitionMode::kExclusive;
    for (const std::string& kv : w_.producer_settings) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos)
        return Status(Errc::kInvalidArgument, "--producer-set '" + kv + "' is not key=value");
      RDMQ_RETURN_IF_ERROR(cfg.Set(kv.substr(0, eq), kv.substr(eq + 1)));
    }
    auto p = std::make_unique<RdmqProducer>(w_, sink);
    RDMQ_RETURN_IF_ERROR(p->Open(cfg));
    return std::unique_ptr<ProducerClient>(std::move(p));
  }

  Result<std::unique_ptr<ConsumerClient>> OpenConsumer(int index, const std::vector<int>& partitions,
                                                       RecordSink* sink) override {
    consumer::ConsumerConfig cfg;
    cfg.client = ClientOptions();
    cfg.client.client_name = "rdmq-bench-consumer-" + std::to_string(index);
    cfg.max_poll_records = 4096;
    for (const std::string& kv : w_.consumer_settings) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos)
        return Status(Errc::kInvalidArgument, "--consumer-set '" + kv + "' is not key=value");
      RDMQ_RETURN_IF_ERROR(cfg.Set(kv.substr(0, eq), kv.substr(eq + 1)));
    }
    auto c = std::make_unique<RdmqConsumer>(sink);
    RDMQ_RETURN_IF_ERROR(c->Open(cfg, w_.topic, partitions));
    return std::unique_ptr<ConsumerClient>(std::move(c));
  }

  Status Cleanup() override {
    Status s;
    {
      auto admin = client::AdminClient::Connect(ClientOptions());
      if (admin.ok()) s = (*admin)->DeleteTopic(w_.topic);
    }
    StopBroker();
    return s;
  }

 private:
  client::ClientOptions ClientOptions() const {
    client::ClientOptions o;
    o.bootstrap = w_.address;
    if (w_.start_broker) {
      std::ifstream in(data_dir_ / "rdmq.addr");
      std::string key, addr;
      if (in >> key >> addr && key == "control") o.bootstrap = addr;
    }
    return o;
  }

  // Starts build/<preset>/bin/rdmq-broker (beside this executable) on a fresh data directory and
  // waits for its control socket.
  Status StartBroker() {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return Status::FromErrno(ec.value(), "find rdmq-bench's own path (/proc/self/exe)");
    const std::filesystem::path broker = self.parent_path() / "rdmq-broker";
    if (!std::filesystem::exists(broker)) {
      return Status(Errc::kNotFound, "--start-broker: " + broker.string() + " is not built");
    }
    std::filesystem::remove_all(data_dir_, ec);
    std::filesystem::create_directories(data_dir_, ec);
    if (ec) return Status::FromErrno(ec.value(), "create the broker's data directory " + data_dir_.string());
    const std::string log = (data_dir_ / "broker.log").string();
    std::vector<std::string> args = {broker.string(),
                                     "--data-dir",
                                     data_dir_.string(),
                                     "--fabric",
                                     w_.fabric,
                                     "--set",
                                     "durability=" + w_.durability,
                                     "--set",
                                     "listen.kafka=127.0.0.1:0"};
    if (w_.fabric != "shm") {
      args.insert(args.end(), {"--set", "listen.control=127.0.0.1:0", "--set", "listen.data=127.0.0.1:0"});
    }
    const pid_t pid = fork();
    if (pid < 0) return Status::FromErrno(errno, "fork for rdmq-broker");
    if (pid == 0) {
      setsid();  // not in the terminal's process group: Ctrl-C reaches rdmq-bench, which stops it
      FILE* f = std::freopen(log.c_str(), "w", stdout);
      if (f != nullptr) dup2(fileno(stdout), STDERR_FILENO);
      std::vector<char*> argv;
      argv.reserve(args.size() + 1);
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    broker_pid_ = pid;
    const std::filesystem::path addr = data_dir_ / "rdmq.addr";
    for (int i = 0; i < 800; ++i) {
      if (!ClientOptions().bootstrap.empty() && std::filesystem::exists(addr)) return Status::Ok();
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        broker_pid_ = 0;
        return Status(Errc::kUnavailable, "rdmq-broker exited while starting; see " + log);
      }
      std::this_thread::sleep_for(25ms);
    }
    return Status(Errc::kTimeout, "rdmq-broker did not write " + addr.string() + " within 20 s; see " + log);
  }

  void StopBroker() {
    if (broker_pid_ == 0) return;
    kill(broker_pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 200; ++i) {
      if (waitpid(broker_pid_, &status, WNOHANG) == broker_pid_) break;
      std::this_thread::sleep_for(25ms);
      if (i == 199) {
        kill(broker_pid_, SIGKILL);
        waitpid(broker_pid_, &status, 0);
      }
    }
    broker_pid_ = 0;
    if (w_.broker_dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(data_dir_, ec);
    }
  }

  Workload w_;
  std::filesystem::path data_dir_;
  int broker_pid_ = 0;
};

}  // namespace

std::unique_ptr<System> MakeRdmqSystem(const Workload& workload) {
  return std::make_unique<RdmqSystem>(workload);
}

}  // namespace rdmq::bench
