#include "group_commands.h"

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rdmq/cli/output.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::cli::admin {
namespace {

using client::GroupDescription;
using client::TopicPartition;
using nlohmann::ordered_json;

// "orders:0,1 logs:2" for people.
std::string FormatPartitions(const std::vector<TopicPartition>& tps) {
  if (tps.empty()) return "-";
  std::string out;
  std::string topic;
  for (const auto& tp : tps) {
    if (out.empty() || tp.topic != topic) {
      if (!out.empty()) out += " ";
      out += tp.topic + ":" + std::to_string(tp.partition);
      topic = tp.topic;
    } else {
      out += "," + std::to_string(tp.partition);
    }
  }
  return out;
}

std::string FormatSubscription(const client::GroupMemberDescription& m) {
  if (!m.topic_regex.empty()) return "/" + m.topic_regex + "/";
  std::string out;
  for (const auto& t : m.topics) out += (out.empty() ? "" : ",") + t;
  return out.empty() ? "-" : out;
}

ordered_json PartitionsJson(const std::vector<TopicPartition>& tps) {
  ordered_json out = ordered_json::array();
  for (const auto& tp : tps) out.push_back({{"topic", tp.topic}, {"partition", tp.partition}});
  return out;
}

// A number, or null where the description says "unknown" (-1).
ordered_json OrNull(int64_t v) { return v < 0 ? ordered_json(nullptr) : ordered_json(v); }

ordered_json GroupJson(const GroupDescription& g) {
  ordered_json j;
  j["group"] = g.group;
  j["type"] = g.type;
  j["state"] = g.state;
  j["group_epoch"] = g.group_epoch;
  j["assignor"] = g.assignor;
  ordered_json members = ordered_json::array();
  for (const auto& m : g.members) {
    ordered_json jm;
    jm["member_id"] = m.member_id;
    jm["instance_id"] = m.instance_id;
    jm["client_id"] = m.client_id;
    jm["member_epoch"] = m.member_epoch;
    jm["topics"] = m.topics;
    jm["topic_regex"] = m.topic_regex;
    jm["assignment"] = PartitionsJson(m.assignment);
    jm["target"] = PartitionsJson(m.target);
    members.push_back(std::move(jm));
  }
  j["members"] = std::move(members);
  ordered_json parts = ordered_json::array();
  int64_t total_lag = 0;
  for (const auto& p : g.partitions) {
    ordered_json jp;
    jp["topic"] = p.topic;
    jp["partition"] = p.partition;
    jp["committed_offset"] = OrNull(p.committed_offset);
    jp["metadata"] = p.metadata;
    jp["commit_ms"] = OrNull(p.commit_ms);
    jp["log_start_offset"] = OrNull(p.log_start_offset);
    jp["log_end_offset"] = OrNull(p.log_end_offset);
    jp["lag"] = OrNull(p.lag);
    jp["member"] = p.owner.empty() ? ordered_json(nullptr) : ordered_json(p.owner);
    if (p.lag > 0) total_lag += p.lag;
    parts.push_back(std::move(jp));
  }
  j["partitions"] = std::move(parts);
  j["total_lag"] = total_lag;
  return j;
}

void PrintGroupText(const GroupDescription& g) {
  int64_t total_lag = 0;
  for (const auto& p : g.partitions) total_lag += p.lag > 0 ? p.lag : 0;
  // A Kafka classic group's epoch is its generation, its assignor the protocol its members chose.
  const bool classic = g.type == "classic";
  std::cout << "group " << g.group << "  state " << g.state << (classic ? "  generation " : "  epoch ")
            << g.group_epoch << (classic ? "  protocol " : "  assignor ")
            << (g.assignor.empty() ? "-" : g.assignor) << "  members " << g.members.size() << "  lag "
            << total_lag << "  type " << (g.type.empty() ? "-" : g.type) << "\n";
  if (!g.members.empty()) {
    std::cout << "\n";
    Table t({"MEMBER", "INSTANCE", "CLIENT", classic ? "GENERATION" : "EPOCH", "SUBSCRIPTION", "ASSIGNMENT"},
            {Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight});
    for (const auto& m : g.members) {
      std::string assignment = FormatPartitions(m.assignment);
      if (m.target != m.assignment) assignment += " (moving to " + FormatPartitions(m.target) + ")";
      t.AddRow({m.member_id, m.instance_id.empty() ? "-" : m.instance_id,
                m.client_id.empty() ? "-" : m.client_id, std::to_string(m.member_epoch),
                FormatSubscription(m), assignment});
    }
    t.Print(std::cout);
  }
  if (!g.partitions.empty()) {
    std::cout << "\n";
    Table t({"TOPIC", "PARTITION", "COMMITTED", "LOG END", "LAG", "MEMBER"},
            {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight});
    for (const auto& p : g.partitions) {
      t.AddRow({p.topic, std::to_string(p.partition), OrDash(p.committed_offset), OrDash(p.log_end_offset),
                OrDash(p.lag), p.owner.empty() ? "-" : p.owner});
    }
    t.Print(std::cout);
  }
}

int GroupList(const Subcommand&, const ParsedArgs& a) {
  int code = 0;
  auto admin = Connect(a, &code);
  if (!admin) return code;
  auto groups = admin->ListGroups();
  if (!groups.ok()) return Fail("group list", groups.status());
  if (a.Has("json")) {
    ordered_json list = ordered_json::array();
    for (const auto& g : *groups)
      list.push_back({{"group", g.group}, {"type", g.type}, {"state", g.state}, {"members", g.members}});
    std::cout << ordered_json{{"groups", std::move(list)}}.dump(2) << "\n";
    return kExitOk;
  }
  if (groups->empty()) {
    std::cout << "no groups\n";
    return kExitOk;
  }
  Table t({"GROUP", "TYPE", "STATE", "MEMBERS"}, {Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight});
  for (const auto& g : *groups) {
    t.AddRow({g.group, g.type.empty() ? "-" : g.type, g.state, std::to_string(g.members)});
  }
  t.Print(std::cout);
  return kExitOk;
}

int GroupDescribe(const Subcommand&, const ParsedArgs& a) {
  int code = 0;
  auto admin = Connect(a, &code);
  if (!admin) return code;
  ordered_json all = ordered_json::array();
  bool first = true;
  for (const auto& name : a.positional()) {
    auto g = admin->DescribeGroup(name);
    if (!g.ok()) return Fail("group describe " + name, g.status());
    if (a.Has("json")) {
      all.push_back(GroupJson(*g));
      continue;
    }
    if (!first) std::cout << "\n";
    first = false;
    PrintGroupText(*g);
  }
  if (a.Has("json")) std::cout << (all.size() == 1 ? all[0] : ordered_json{{"groups", all}}).dump(2) << "\n";
  return kExitOk;
}

int GroupDelete(const Subcommand&, const ParsedArgs& a) {
  int code = 0;
  auto admin = Connect(a, &code);
  if (!admin) return code;
  ordered_json deleted = ordered_json::array();
  for (const auto& name : a.positional()) {
    Status s = admin->DeleteGroup(name);
    if (s.is(protocol::WireError::kGroupNotEmpty)) {
      const int failed = Fail("group delete " + name, s);
      std::cerr << "rdmq: a group with members cannot be deleted: stop its consumers (a crashed one leaves "
                   "after session.timeout.ms), then retry\n";
      return failed;
    }
    if (!s.ok() && !(a.Has("if-exists") && s.is(Errc::kNotFound))) return Fail("group delete " + name, s);
    if (s.ok()) deleted.push_back(name);
    if (!a.Has("json")) std::cout << (s.ok() ? "deleted group " : "no group ") << name << "\n";
  }
  if (a.Has("json")) std::cout << ordered_json{{"deleted", deleted}}.dump(2) << "\n";
  return kExitOk;
}

}  // namespace

CommandGroup GroupCommands() {
  return CommandGroup{
      "group",
      "List, describe and delete consumer groups; reset their committed offsets.",
      {
          Subcommand{
              CommandSpec{
                  .path = "rdmq group list",
                  .usage = "[options]",
                  .summary = "List every consumer group with its type, state and member count.",
                  .description =
                      "A group is listed while it has members or committed offsets. TYPE is 'consumer'\n"
                      "for rdmq's own clients, 'classic' for Kafka clients (JoinGroup/SyncGroup), '-' for\n"
                      "a group with committed offsets only.",
                  .options = WithGlobals({}),
                  .examples = {"rdmq group list", "rdmq group list --json | jq -r '.groups[].group'"}},
              GroupList},
          Subcommand{
              CommandSpec{
                  .path = "rdmq group describe",
                  .usage = "GROUP... [options]",
                  .summary = "Show a group's members, assignments, committed offsets and lag.",
                  .description =
                      "The partition table has every partition the group committed an offset for or a\n"
                      "member owns: the committed offset, the log end (high watermark), the lag (log end\n"
                      "minus committed, never negative) and the member that owns it ('-' where none).\n"
                      "With --json and one GROUP, prints the group object; with several, {\"groups\": "
                      "[...]}.",
                  .options = WithGlobals({}),
                  .examples = {"rdmq group describe billing",
                               "rdmq group describe billing --json | jq '.total_lag'"},
                  .min_positional = 1,
                  .max_positional = 1000},
              GroupDescribe},
          Subcommand{
              CommandSpec{
                  .path = "rdmq group delete",
                  .usage = "GROUP... [options]",
                  .summary = "Delete groups and their committed offsets (only groups without members).",
                  .options = WithGlobals({{"if-exists", 0, "", "succeed if a group does not exist"}}),
                  .examples = {"rdmq group delete billing", "rdmq group delete a b c --if-exists"},
                  .min_positional = 1,
                  .max_positional = 1000},
              GroupDelete},
          Subcommand{GroupResetOffsetsSpec(), GroupResetOffsets},
      }};
}

}  // namespace rdmq::cli::admin
