// rdmq: the admin CLI. Topic administration against a broker (AdminClient), the cluster's status
// (cluster_commands.cc), consumer groups (group_commands.cc), SASL users (user_commands.cc), ACLs
// (acl_commands.cc), and `partition inspect`, which reads a partition's files directly. This file
// holds the topic and partition commands and the dispatcher.
//
//   rdmq [--broker ADDR] [--json] <command> <subcommand> [options] [arguments]
//
// Exit status: 0 success, 1 the operation failed (the message says why), 2 bad command line.
// docs/cli.md describes every command; `--help` works on each.
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "acl_commands.h"
#include "admin_common.h"
#include "cluster_commands.h"
#include "config_list.h"
#include "group_commands.h"
#include "rdmq/cli/args.h"
#include "rdmq/cli/inspect.h"
#include "rdmq/cli/output.h"
#include "rdmq/client/admin.h"
#include "rdmq/client/options.h"
#include "rdmq/common/main.h"
#include "reassign_command.h"
#include "user_commands.h"

namespace rdmq::cli {
namespace {

using admin::AclCommands;
using admin::ClusterCommands;
using admin::CommandGroup;
using admin::Connect;
using admin::Fail;
using admin::GlobalOptions;
using admin::GroupCommands;
using admin::Ids;
using admin::LocalNum;
using admin::PartitionJson;
using admin::PartitionReassignCommand;
using admin::Subcommand;
using admin::Usage;
using admin::UserCommands;
using admin::WithGlobals;
using client::TopicDescription;
using nlohmann::ordered_json;
using Configs = std::vector<std::pair<std::string, std::string>>;

Result<Configs> ConfigsFrom(const ParsedArgs& a) {
  Configs out;
  for (const auto& kv : a.GetAll("config")) {
    RDMQ_ASSIGN_OR_RETURN(auto p, ParseKeyValue(kv, "--config"));
    out.push_back(std::move(p));
  }
  if (auto p = a.Get("partitions")) {
    RDMQ_ASSIGN_OR_RETURN(int64_t n, ParseInt(*p, "--partitions", 1, 4096));
    out.emplace_back("partitions", std::to_string(n));
  }
  return out;
}

ordered_json TopicJson(const TopicDescription& t, bool with_partitions) {
  ordered_json j;
  j["name"] = t.name;
  j["id"] = t.id;
  j["created_ms"] = t.created_ms;
  j["partition_count"] = t.partition_count();
  ordered_json configs = ordered_json::object();
  for (const auto& [k, v] : t.configs) configs[k] = v;
  j["configs"] = std::move(configs);
  if (with_partitions) {
    ordered_json parts = ordered_json::array();
    for (const auto& p : t.partitions) parts.push_back(PartitionJson(p));
    j["partitions"] = std::move(parts);
  }
  return j;
}

void PrintTopicText(const TopicDescription& t) {
  std::cout << "topic " << t.name << "  id " << t.id << "  partitions " << t.partition_count() << "  created "
            << FormatTimestampMs(t.created_ms) << "\n";
  if (!t.configs.empty()) {
    std::cout << "\n";
    Table c({"CONFIG", "VALUE"});
    for (const auto& [k, v] : t.configs) c.AddRow({k, v});
    c.Print(std::cout);
  }
  if (!t.partitions.empty()) {
    std::cout << "\n";
    Table p({"PARTITION", "LEADER", "REPLICAS", "ISR", "LOG START", "HIGH WATERMARK", "RECORDS", "SEGMENTS",
             "BYTES", "ACTIVE SEGMENT", "PRODUCER"},
            {Align::kRight, Align::kRight, Align::kLeft, Align::kLeft, Align::kRight, Align::kRight,
             Align::kRight, Align::kRight, Align::kRight, Align::kRight});
    for (const auto& d : t.partitions) {
      p.AddRow({std::to_string(d.partition), d.leader >= 0 ? std::to_string(d.leader) : "none",
                Ids(d.replicas), Ids(d.isr), LocalNum(d, d.log_start_offset), LocalNum(d, d.high_watermark),
                LocalNum(d, d.high_watermark - d.log_start_offset), LocalNum(d, d.segments),
                d.local ? FormatBytes(d.bytes) : "-", LocalNum(d, d.active_segment_base),
                d.exclusive_lease ? "exclusive" : "-"});
    }
    p.Print(std::cout);
  }
}

// ---------------------------------------------------------------------------------------------
// topic

int TopicCreate(const Subcommand&, const ParsedArgs& a) {
  const std::string& name = a.positional()[0];
  auto configs = ConfigsFrom(a);
  if (!configs.ok()) return Usage(configs.status());
  int code = 0;
  auto admin = Connect(a, &code);
  if (!admin) return code;
  auto t = admin->CreateTopic(name, *configs);
  if (!t.ok()) {
    if (a.Has("if-not-exists") && t.status().is(Errc::kAlreadyExists)) {
      t = admin->DescribeTopic(name);
      if (!t.ok()) return Fail("topic create " + name, t.status());
    } else {
      return Fail("topic create " + name, t.status());
    }
  } else if (t->partitions.empty()) {
    // CreateTopic's answer has no partition details; describe for the full picture.
    if (auto d = admin->DescribeTopic(name); d.ok()) t = std::move(d);
  }
  if (a.Has("json")) {
    std::cout << TopicJson(*t, true).dump(2) << "\n";
  } else {
    std::cout << "created topic " << t->name << " (" << t->partition_count() << " partition"
              << (t->partition_count() == 1 ? "" : "s") << ")\n";
  }
  return kExitOk;
}

int TopicList(const Subcommand&, const ParsedArgs& a) {
  int code = 0;
  auto admin = Connect(a, &code);
  if (!admin) return code;
  auto topics = admin->ListTopics();
  if (!topics.ok()) return Fail("topic list", topics.status());
  std::sort(topics->begin(), topics->end(), [](const auto& x, const auto& y) { return x.name < y.name; });
  if (a.Has("json")) {
    ordered_json list = ordered_json::array();
    for (const auto& t : *topics) list.push_back(TopicJson(t, false));
    std::cout << ordered_json{{"topics", std::move(list)}}.dump(2) << "\n";
    return kExitOk;
  }
  if (topics->empty()) {
    std::cout << "no topics\n";
    return kExitOk;
  }
  Table t({"TOPIC", "PARTITIONS", "ID", "CREATED"}, {Align::kLeft, Align::kRight, Align::kRight});
  for (const auto& d : *topics) {
    t.AddRow(
        {d.name, std::to_string(d.partition_count()), std::to_string(d.id), FormatTimestampMs(d.created_ms)});
  }
  t.Print(std::cout);
  return kExitOk;
}

int TopicDescribe(const Subcommand&, const ParsedArgs& a) {
  int code = 0;
  auto admin = Connect(a, &code);
  if (!admin) return code;
  bool first = true;
  ordered_json all = ordered_json::array();
  for (const auto& name : a.positional()) {
    auto t = admin->DescribeTopic(name);
    if (!t.ok()) return Fail("topic describe " + name, t.status());
    if (a.Has("json")) {
      all.push_back(TopicJson(*t, true));
      continue;
    }
    if (!first) std::cout << "\n";
    first = false;
    PrintTopicText(*t);
  }
  if (a.Has("json")) std::cout << (all.size() == 1 ? all[0] : ordered_json{{"topics", all}}).dump(2) << "\n";
  return kExitOk;
}

int TopicDelete(const Subcommand&, const ParsedArgs& a) {
  int code = 0;
  auto admin = Connect(a, &code);
  if (!admin) return code;
  ordered_json deleted = ordered_json::array();
  for (const auto& name : a.positional()) {
    Status s = admin->DeleteTopic(name);
    if (!s.ok() && !(a.Has("if-exists") && s.is(Errc::kNotFound))) return Fail("topic delete " + name, s);
    if (s.ok()) deleted.push_back(name);
    if (!a.Has("json")) std::cout << (s.ok() ? "deleted topic " : "no topic ") << name << "\n";
  }
  if (a.Has("json")) std::cout << ordered_json{{"deleted", deleted}}.dump(2) << "\n";
  return kExitOk;
}

int TopicAlter(const Subcommand& sc, const ParsedArgs& a) {
  const std::string& name = a.positional()[0];
  auto configs = ConfigsFrom(a);
  if (!configs.ok()) return Usage(configs.status());
  if (configs->empty()) {
    return Usage(UsageError("topic alter: nothing to change (give --config KEY=VALUE or --partitions N); " +
                            sc.spec.SeeHelp()));
  }
  int code = 0;
  auto admin = Connect(a, &code);
  if (!admin) return code;
  auto t = admin->AlterTopic(name, *configs);
  if (!t.ok()) return Fail("topic alter " + name, t.status());
  if (auto d = admin->DescribeTopic(name); d.ok()) t = std::move(d);
  if (a.Has("json")) {
    std::cout << TopicJson(*t, true).dump(2) << "\n";
  } else {
    std::cout << "altered topic " << name << ":";
    for (const auto& [k, v] : *configs) std::cout << " " << k << "=" << v;
    std::cout << "\n";
  }
  return kExitOk;
}

// ---------------------------------------------------------------------------------------------
// partition

int PartitionInspect(const Subcommand&, const ParsedArgs& a) {
  InspectOptions opts;
  opts.records = a.Has("records");
  if (a.Has("segment")) {
    auto base = a.GetInt("segment", 0, 0, INT64_MAX);
    if (!base.ok()) return Usage(base.status());
    opts.segment = *base;
  }
  std::string path = a.positional()[0];
  if (a.positional().size() == 2) {  // TOPIC PARTITION in a broker's data directory
    auto n = ParseInt(a.positional()[1], "PARTITION", 0, 4095);
    if (!n.ok()) return Usage(n.status());
    path = a.GetOr("data-dir", "./rdmq-data") + "/topics/" + path + "-" + std::to_string(*n);
  } else if (a.Has("data-dir")) {
    return Usage(UsageError("partition inspect: --data-dir goes with TOPIC PARTITION, not with a PATH"));
  }
  auto dump = InspectPartition(path, opts);
  if (!dump.ok()) return Fail("partition inspect", dump.status());
  if (a.Has("json")) {
    std::cout << InspectToJson(*dump, opts.records) << "\n";
  } else {
    PrintInspectText(*dump, opts.records, std::cout);
  }
  std::cout.flush();
  return dump->problems.empty() ? kExitOk : kExitError;
}

// ---------------------------------------------------------------------------------------------
// The command tree

std::vector<CommandGroup> Commands() {
  std::vector<CommandGroup> g;
  g.push_back(CommandGroup{
      "topic",
      "Create, list, describe, alter and delete topics.",
      {
          Subcommand{
              CommandSpec{
                  .path = "rdmq topic create",
                  .usage = "NAME [--partitions N] [--config KEY=VALUE]... [options]",
                  .summary = "Create a topic.",
                  .description =
                      "Config keys are Kafka's (docs/metadata-format.md): partitions, segment.bytes,\n"
                      "retention.bytes, retention.ms, index.interval.bytes, max.message.bytes,\n"
                      "durability (durable|visibility). Keys not given take the broker's defaults.",
                  .options = WithGlobals({{"partitions", 'p', "N", "number of partitions (1..4096)"},
                                          {"config", 'c', "KEY=VALUE", "a topic config; repeatable", true},
                                          {"if-not-exists", 0, "", "succeed if the topic already exists"}}),
                  .examples = {"rdmq topic create orders --partitions 3",
                               "rdmq topic create logs -c retention.ms=3600000 -c segment.bytes=16777216",
                               "rdmq topic create orders -p 3 --if-not-exists --json"},
                  .min_positional = 1,
                  .max_positional = 1},
              TopicCreate},
          Subcommand{
              CommandSpec{.path = "rdmq topic list",
                          .usage = "[options]",
                          .summary = "List every topic with its partition count.",
                          .options = WithGlobals({}),
                          .examples = {"rdmq topic list", "rdmq topic list --json | jq -r '.topics[].name'"}},
              TopicList},
          Subcommand{
              CommandSpec{
                  .path = "rdmq topic describe",
                  .usage = "NAME... [options]",
                  .summary = "Show a topic's configs and each partition's offsets and size.",
                  .description = "With --json and one NAME, prints the topic object; with several, "
                                 "{\"topics\": [...]}.",
                  .options = WithGlobals({}),
                  .examples = {"rdmq topic describe orders",
                               "rdmq topic describe orders --json | jq '.partitions[].high_watermark'"},
                  .min_positional = 1,
                  .max_positional = 1000},
              TopicDescribe},
          Subcommand{CommandSpec{.path = "rdmq topic alter",
                                 .usage = "NAME [--partitions N] [--config KEY=VALUE]... [options]",
                                 .summary = "Change a topic's configs; partitions may grow, never shrink.",
                                 .options = WithGlobals(
                                     {{"partitions", 'p', "N", "new number of partitions"},
                                      {"config", 'c', "KEY=VALUE", "a topic config; repeatable", true}}),
                                 .examples = {"rdmq topic alter orders --partitions 6",
                                              "rdmq topic alter logs -c retention.ms=600000"},
                                 .min_positional = 1,
                                 .max_positional = 1},
                     TopicAlter},
          Subcommand{
              CommandSpec{.path = "rdmq topic delete",
                          .usage = "NAME... [options]",
                          .summary = "Delete topics and their data.",
                          .options = WithGlobals({{"if-exists", 0, "", "succeed if a topic does not exist"}}),
                          .examples = {"rdmq topic delete orders", "rdmq topic delete a b c --if-exists"},
                          .min_positional = 1,
                          .max_positional = 1000},
              TopicDelete},
      }});
  g.push_back(GroupCommands());
  g.push_back(UserCommands());
  g.push_back(AclCommands());
  g.push_back(CommandGroup{
      "partition",
      "Look inside partition logs; move a partition's replicas.",
      {PartitionReassignCommand(),
       Subcommand{
           CommandSpec{
               .path = "rdmq partition inspect",
               .usage = "PATH | TOPIC PARTITION [--data-dir DIR] [--records] [--segment BASE] [--json]",
               .summary = "Dump a partition's segment files batch by batch and verify every CRC.",
               .description =
                   "PATH is a partition directory (segment files <base offset>.seg and partition.slot) or\n"
                   "one .seg file; TOPIC PARTITION means DIR/topics/TOPIC-PARTITION in a broker's data\n"
                   "directory. The files are opened read-only, so this is safe next to a running broker.\n"
                   "For every batch: position, offsets, record count, size, timestamps, producer id, epoch\n"
                   "and sequence, control/filler flags and whether the CRC verifies. Every problem (CRC\n"
                   "mismatch, malformed header, offsets that do not continue, ...) is reported with its\n"
                   "segment, data-area position and file offset.\n"
                   "Exit status: 0 when everything verified, 1 when a problem was found or PATH is not\n"
                   "a partition, 2 on a bad command line.",
               .options = WithGlobals(
                   {{"records", 'r', "", "print every record (key, value, headers) too"},
                    {"segment", 's', "BASE", "only the segment with this base offset"},
                    {"data-dir", 'd', "DIR", "the broker's data directory (default ./rdmq-data)"}}),
               .examples =
                   {"rdmq partition inspect orders 0",
                    "rdmq partition inspect --data-dir /var/lib/rdmq orders 2 --segment 1048576",
                    "rdmq partition inspect rdmq-data/topics/orders-0",
                    "rdmq partition inspect rdmq-data/topics/orders-0/00000000000000000000.seg --records",
                    "rdmq partition inspect DIR --json | jq '.problems'"},
               .min_positional = 1,
               .max_positional = 2},
           PartitionInspect}}});
  g.push_back(CommandGroup{
      "config",
      "The configuration keys of every component.",
      {Subcommand{ConfigListSpec(), [](const Subcommand&, const ParsedArgs& a) { return ConfigList(a); }}}});
  g.push_back(ClusterCommands());
  return g;
}

CommandSpec TopSpec(const std::vector<CommandGroup>& groups) {
  CommandSpec s;
  s.path = "rdmq";
  s.usage = "[--broker ADDR] [--json] <command> <subcommand> [options] [arguments]";
  s.summary =
      "Administer an rdmq broker: topics, consumer groups, SASL users, ACLs, partitions, cluster "
      "status; list config keys.";
  s.description =
      "Every command takes --help. Exit status: 0 success, 1 the operation failed, 2 bad command line.\n"
      "Related tools: rdmq-produce (stdin lines to records), rdmq-consume (records to stdout), rdmq-broker.";
  s.options = GlobalOptions();
  for (const auto& g : groups) {
    for (const auto& sc : g.subcommands) s.subcommands.emplace_back(sc.spec.path.substr(5), sc.spec.summary);
  }
  s.examples = {"rdmq topic create orders --partitions 3",
                "rdmq topic list",
                "rdmq topic describe orders --json",
                "rdmq group describe billing",
                "rdmq group reset-offsets billing --topic orders --to-earliest --execute",
                "rdmq user add alice --password-file alice.pw",
                "rdmq acl add --principal User:alice --operation write --topic orders",
                "rdmq cluster status",
                "rdmq partition inspect rdmq-data/topics/orders-0",
                "rdmq config list producer"};
  return s;
}

// The positions of the first two words that are neither options nor option values.
std::vector<size_t> CommandWords(const std::vector<std::string>& words) {
  std::vector<size_t> at;
  for (size_t i = 0; i < words.size() && at.size() < 2; ++i) {
    const std::string& w = words[i];
    if (w == "--") break;
    if (w.size() > 1 && w[0] == '-') {
      // A global option with a separate value: skip the value.
      for (const auto& o : GlobalOptions()) {
        if (o.value_name.empty()) continue;
        if (w == "--" + o.name || (o.short_name && w == std::string("-") + o.short_name)) ++i;
      }
      continue;
    }
    at.push_back(i);
  }
  return at;
}

int Main(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  const auto groups = Commands();
  const CommandSpec top = TopSpec(groups);
  const auto at = CommandWords(words);
  if (at.empty()) {
    auto a = top.Parse(words);
    if (!a.ok()) return Usage(a.status());
    if (a->help()) {
      std::cout << top.HelpText();
      return kExitOk;
    }
    std::cerr << top.HelpText();
    return Usage(UsageError("no command given"));
  }
  const std::string& cmd = words[at[0]];
  const CommandGroup* group = nullptr;
  for (const auto& g : groups) {
    if (g.name == cmd) group = &g;
  }
  if (group == nullptr) {
    return Usage(UsageError("unknown command '" + cmd +
                            "' (commands: topic, group, user, acl, partition, config, cluster); " +
                            top.SeeHelp()));
  }
  const CommandSpec gspec = group->Spec();
  if (at.size() < 2) {
    std::vector<std::string> rest = words;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(at[0]));
    auto a = gspec.Parse(rest);
    if (!a.ok()) return Usage(a.status());
    if (a->help()) {
      std::cout << gspec.HelpText();
      return kExitOk;
    }
    std::cerr << gspec.HelpText();
    return Usage(UsageError("'rdmq " + cmd + "' needs a subcommand"));
  }
  const std::string& sub = words[at[1]];
  const Subcommand* sc = nullptr;
  const std::string path = "rdmq " + cmd + " " + sub;
  for (const auto& s : group->subcommands) {
    if (s.spec.path == path) sc = &s;
  }
  if (sc == nullptr) {
    std::string known;
    for (const auto& s : group->subcommands)
      known += (known.empty() ? "" : ", ") + s.spec.path.substr(6 + cmd.size());
    return Usage(
        UsageError("unknown subcommand '" + sub + "' of '" + cmd + "' (" + known + "); " + gspec.SeeHelp()));
  }
  std::vector<std::string> rest;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i != at[0] && i != at[1]) rest.push_back(words[i]);
  }
  auto a = sc->spec.Parse(rest);
  if (!a.ok()) return Usage(a.status());
  if (a->help()) {
    std::cout << sc->spec.HelpText();
    return kExitOk;
  }
  return sc->run(*sc, *a);
}

}  // namespace
}  // namespace rdmq::cli

int main(int argc, char** argv) {
  return rdmq::RunMain("rdmq", [&] { return rdmq::cli::Main(argc, argv); });
}
