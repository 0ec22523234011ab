// BrokerProcess: an rdmq-broker that rdmq-bench starts for a run (--start-broker) and stops after,
// shared by the backends that talk to rdmq's broker (the "rdmq" backend through its own clients,
// the "kafka" backend through its Kafka listener).
//
//   BrokerProcess b(workload);                  // decides the data directory; starts nothing
//   RDMQ_RETURN_IF_ERROR(b.Start(workload, "kafka"));   // waits for rdmq.addr's "kafka" line
//   std::string addr = b.Address("kafka");      // "127.0.0.1:40123" ("" until written)
//   b.Stop();                                   // SIGTERM, SIGKILL after 5 s; the dir is deleted
//
// The broker is build/<preset>/bin/rdmq-broker beside this executable, started on a fresh data
// directory (Workload::broker_dir, or a new one under $TMPDIR that Stop deletes) with the
// workload's fabric and durability and the Kafka listener on 127.0.0.1:0; its output goes to
// <data dir>/broker.log. It writes its addresses to <data dir>/rdmq.addr once it serves, one
// "KEY ADDRESS" line per listener (control, data, kafka).
//
// The data directory is decided in the constructor, before the driver forks its workers, so
// every worker process finds the broker through the same rdmq.addr.
// Threading: Start and Stop from one thread; Address from any process.
#pragma once

#include <filesystem>
#include <string>

#include "rdmq/bench/system.h"
#include "rdmq/common/status.h"

namespace rdmq::bench {

class BrokerProcess {
 public:
  explicit BrokerProcess(const Workload& w);
  ~BrokerProcess() { Stop(); }
  BrokerProcess(const BrokerProcess&) = delete;
  BrokerProcess& operator=(const BrokerProcess&) = delete;

  // Starts the broker and waits (up to 20 s) until rdmq.addr names `wait_for` (e.g. "control").
  Status Start(const Workload& w, const std::string& wait_for);
  // Stops the broker if it runs; deletes the data directory unless the workload named one.
  void Stop();
  // The address rdmq.addr gives for `key`, or "" when it has none (yet).
  std::string Address(const std::string& key) const;
  int pid() const { return pid_; }
  bool running() const { return pid_ != 0; }

 private:
  std::filesystem::path dir_;
  bool keep_dir_ = false;
  int pid_ = 0;
};

}  // namespace rdmq::bench
