#include "cluster_commands.h"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "rdmq/cli/output.h"

namespace rdmq::cli::admin {
namespace {

using client::AdminClient;
using client::TopicDescription;
using nlohmann::ordered_json;

int ClusterStatus(const Subcommand&, const ParsedArgs& a) {
  auto opts = ClientOptionsFrom(a);
  if (!opts.ok()) return Usage(opts.status());
  const std::string addr = opts->ResolvedBootstrap();
  const bool json = a.Has("json");
  auto unreachable = [&](const std::string& what, const Status& s) {
    if (json) {
      std::cout << ordered_json{{"broker", addr},
                                {"reachable", false},
                                {"error", what + ": " + FormatError(s)}}
                       .dump(2)
                << "\n";
    }
    return Fail(what, s);
  };
  auto admin = AdminClient::Connect(*opts);
  if (!admin.ok()) return unreachable("cannot reach the broker at " + addr, admin.status());
  auto cluster = (*admin)->DescribeCluster();
  if (!cluster.ok()) return unreachable("describe the cluster", cluster.status());
  auto topics = (*admin)->ListTopics();
  if (!topics.ok()) return unreachable("list topics", topics.status());
  std::sort(topics->begin(), topics->end(), [](const auto& x, const auto& y) { return x.name < y.name; });
  std::vector<TopicDescription> described;
  for (const auto& t : *topics) {
    auto d = (*admin)->DescribeTopic(t.name);
    if (!d.ok()) {
      if (d.status().is(Errc::kNotFound)) continue;  // deleted meanwhile
      return unreachable("describe topic " + t.name, d.status());
    }
    described.push_back(std::move(*d));
  }
  size_t partitions = 0, under = 0, offline = 0;
  int64_t records = 0;
  uint64_t bytes = 0;
  for (const auto& t : described) {
    for (const auto& p : t.partitions) {
      ++partitions;
      if (p.leader < 0) ++offline;
      if (p.isr.size() < p.replicas.size()) ++under;
      if (!p.local) continue;
      records += p.high_watermark - p.log_start_offset;
      bytes += p.bytes;
    }
  }
  if (json) {
    ordered_json j;
    j["broker"] = addr;
    j["reachable"] = true;
    j["clustered"] = cluster->clustered;
    j["this_broker"] = cluster->this_broker;
    j["controller"] = cluster->controller;
    j["controller_epoch"] = cluster->controller_epoch;
    if (cluster->clustered) j["zookeeper"] = cluster->zookeeper;
    ordered_json brokers = ordered_json::array();
    for (const auto& b : cluster->brokers) {
      brokers.push_back({{"id", b.id}, {"control", b.control}, {"data", b.data}, {"kafka", b.kafka}});
    }
    j["brokers"] = std::move(brokers);
    j["topic_count"] = described.size();
    j["partition_count"] = partitions;
    j["under_replicated_partitions"] = under;
    j["offline_partitions"] = offline;
    j["records"] = records;
    j["bytes"] = bytes;
    ordered_json ts = ordered_json::array();
    for (const auto& t : described) {
      ordered_json jt;
      jt["name"] = t.name;
      ordered_json ps = ordered_json::array();
      for (const auto& p : t.partitions) ps.push_back(PartitionJson(p));
      jt["partitions"] = std::move(ps);
      ts.push_back(std::move(jt));
    }
    j["topics"] = std::move(ts);
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "broker      " << addr << " (reachable)\n";
  if (cluster->clustered) {
    std::cout << "cluster     " << cluster->brokers.size() << " live broker"
              << (cluster->brokers.size() == 1 ? "" : "s") << " on ZooKeeper " << cluster->zookeeper
              << "; this is broker " << cluster->this_broker << "; controller "
              << (cluster->controller >= 0 ? "broker " + std::to_string(cluster->controller)
                                           : std::string("none"))
              << " (epoch " << cluster->controller_epoch << ")\n";
  } else {
    std::cout << "cluster     none (a broker on its own)\n";
  }
  std::cout << "topics      " << described.size() << "\n"
            << "partitions  " << partitions << " (" << under << " under-replicated, " << offline
            << " without a leader)\n"
            << "records     " << records << " (" << FormatBytes(bytes) << " in segments"
            << (cluster->clustered ? " of the replicas this broker holds" : "") << ")\n";
  if (cluster->clustered && !cluster->brokers.empty()) {
    std::cout << "\n";
    Table b({"BROKER", "CONTROL", "DATA", "KAFKA"});
    for (const auto& x : cluster->brokers) {
      b.AddRow({std::to_string(x.id) + (x.id == cluster->controller ? " (controller)" : ""), x.control,
                x.data, x.kafka.empty() ? "-" : x.kafka});
    }
    b.Print(std::cout);
  }
  if (partitions > 0) {
    std::cout << "\n";
    Table t({"TOPIC", "PARTITION", "LEADER", "ISR", "LOG START", "HIGH WATERMARK", "RECORDS", "SEGMENTS",
             "BYTES", "PRODUCER"},
            {Align::kLeft, Align::kRight, Align::kRight, Align::kLeft, Align::kRight, Align::kRight,
             Align::kRight, Align::kRight, Align::kRight});
    for (const auto& d : described) {
      for (const auto& p : d.partitions) {
        t.AddRow({d.name, std::to_string(p.partition), p.leader >= 0 ? std::to_string(p.leader) : "none",
                  Ids(p.isr), LocalNum(p, p.log_start_offset), LocalNum(p, p.high_watermark),
                  LocalNum(p, p.high_watermark - p.log_start_offset), LocalNum(p, p.segments),
                  p.local ? FormatBytes(p.bytes) : "-", p.exclusive_lease ? "exclusive" : "-"});
      }
    }
    t.Print(std::cout);
  }
  return kExitOk;
}

}  // namespace

CommandGroup ClusterCommands() {
  return CommandGroup{
      "cluster",
      "Cluster-wide views.",
      {Subcommand{
          CommandSpec{.path = "rdmq cluster status",
                      .usage = "[options]",
                      .summary = "Is the broker reachable; the cluster's brokers and controller; every "
                                 "partition's leader and in-sync replicas.",
                      .description = "In a cluster (docs/replication.md) any broker answers for the whole "
                                     "cluster; the log's numbers (high watermark, records, bytes) are shown "
                                     "for the replicas the answering broker holds, '-' for the others.",
                      .options = WithGlobals({}),
                      .examples = {"rdmq cluster status",
                                   "rdmq --broker tcp:10.0.0.1:9192 cluster status --json | jq "
                                   ".under_replicated_partitions"}},
          ClusterStatus}}};
}

}  // namespace rdmq::cli::admin
