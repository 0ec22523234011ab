#include "reassign_command.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

namespace rdmq::cli::admin {
namespace {

using nlohmann::ordered_json;

// "3,2,1" as broker ids.
Result<std::vector<int32_t>> BrokerList(const std::string& text) {
  std::vector<int32_t> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    RDMQ_ASSIGN_OR_RETURN(
        int64_t id, ParseInt(std::string_view(text).substr(at, comma - at), "--replicas: a broker id", 0,
                             std::numeric_limits<int32_t>::max()));
    out.push_back(static_cast<int32_t>(id));
    at = comma + 1;
  }
  return out;
}

Result<client::PartitionDescription> Describe(client::AdminClient& admin, const std::string& topic,
                                              int32_t partition) {
  RDMQ_ASSIGN_OR_RETURN(client::TopicDescription t, admin.DescribeTopic(topic));
  for (auto& p : t.partitions) {
    if (p.partition == partition) return std::move(p);
  }
  return Status(Errc::kNotFound, "topic " + topic + " has no partition " + std::to_string(partition));
}

// The move is complete: the replicas are the target's, all in sync, one of them leading.
bool Done(const client::PartitionDescription& p, const std::vector<int32_t>& target) {
  auto has = [](const std::vector<int32_t>& v, int32_t b) {
    return std::find(v.begin(), v.end(), b) != v.end();
  };
  if (p.replicas != target || !has(target, p.leader)) return false;
  return std::all_of(target.begin(), target.end(), [&](int32_t b) { return has(p.isr, b); });
}

int Reassign(const Subcommand& sc, const ParsedArgs& a) {
  const std::string& topic = a.positional()[0];
  auto partition = ParseInt(a.positional()[1], "PARTITION", 0, std::numeric_limits<int32_t>::max());
  if (!partition.ok()) return Usage(partition.status());
  const auto list = a.Get("replicas");
  if (!list)
    return Usage(
        UsageError("partition reassign: give the new replicas (--replicas 3,2,1); " + sc.spec.SeeHelp()));
  auto target = BrokerList(*list);
  if (!target.ok()) return Usage(target.status());
  const auto p = static_cast<int32_t>(*partition);
  const std::string where = topic + "-" + std::to_string(p);
  const bool json = a.Has("json");
  int code = 0;
  auto admin = Connect(a, &code);
  if (!admin) return code;
  auto before = Describe(*admin, topic, p);
  if (!before.ok()) return Fail("partition reassign " + where, before.status());
  if (Status s = admin->ReassignPartition(topic, p, *target); !s.ok())
    return Fail("partition reassign " + where, s);
  if (!json)
    std::cout << "moving " << where << " from brokers " << Ids(before->replicas) << " to " << Ids(*target)
              << "\n";
  client::PartitionDescription now = *before;
  bool done = false;
  if (a.Has("wait")) {
    // The new replicas copy the log, join the ISR, then the controller completes the move.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(30);
    std::string shown;
    while (std::chrono::steady_clock::now() < deadline) {
      auto d = Describe(*admin, topic, p);
      if (d.ok()) {
        now = std::move(*d);
        done = Done(now, *target);
        const std::string line = "replicas " + Ids(now.replicas) + ", in sync " + Ids(now.isr) + ", leader " +
                                 (now.leader >= 0 ? std::to_string(now.leader) : std::string("none"));
        if (!json && line != shown) std::cout << "  " << line << "\n" << std::flush;
        shown = line;
        if (done) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    if (!done)
      return Fail("partition reassign " + where,
                  Status(Errc::kTimeout, "the move did not complete in 30 minutes"));
  }
  if (json) {
    std::cout << ordered_json{{"topic", topic}, {"partition", p},      {"from", before->replicas},
                              {"to", *target},  {"done", done},        {"replicas", now.replicas},
                              {"isr", now.isr}, {"leader", now.leader}}
                     .dump(2)
              << "\n";
  } else if (done) {
    std::cout << "moved " << where << " to brokers " << Ids(*target) << " (leader " << now.leader << ")\n";
  } else {
    std::cout << "the new replicas catch up, then the controller completes the move; follow it with\n"
                 "  rdmq topic describe "
              << topic << "   (or run this with --wait)\n";
  }
  return kExitOk;
}

}  // namespace

Subcommand PartitionReassignCommand() {
  return Subcommand{
      CommandSpec{
          .path = "rdmq partition reassign",
          .usage = "TOPIC PARTITION --replicas IDS [--wait] [options]",
          .summary = "Move a partition's replicas to other brokers of the cluster.",
          .description =
              "IDS are broker ids, comma-separated, as many as the topic's replication factor; the first\n"
              "is the preferred leader. The new replicas are added beside the old ones and fed the log by\n"
              "the leader; once every new one is in sync the controller completes the move: the replicas\n"
              "become IDS, a new one leads if the leader was not among them (the leader epoch goes up),\n"
              "and the old ones drop their copies. Nothing acknowledged is lost: the old replicas leave\n"
              "only after the new ones hold everything. The same brokers in another order only change\n"
              "the preferred leader. One move per partition at a time (REASSIGNMENT_IN_PROGRESS).\n"
              "Needs Alter on the cluster where the authorizer is on. Exit status: 0 started (with\n"
              "--wait: completed), 1 refused or failed, 2 bad command line.",
          .options =
              WithGlobals({{"replicas", 'r', "IDS", "the new replicas: broker ids, comma-separated"},
                           {"wait", 'w', "", "follow the move until it completed (up to 30 minutes)"}}),
          .examples = {"rdmq partition reassign orders 0 --replicas 3,2",
                       "rdmq partition reassign orders 0 -r 4,5,6 --wait",
                       "rdmq partition reassign orders 0 -r 2,1   # the same brokers: broker 2 preferred"},
          .min_positional = 2,
          .max_positional = 2},
      Reassign};
}

}  // namespace rdmq::cli::admin
