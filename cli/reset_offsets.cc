// `rdmq group reset-offsets`: plans new committed offsets for a group's partitions, prints the
// plan, and commits it (a simple commit, all or none) with --execute. Only for a group without
// members: a running consumer would overwrite the new offsets with its own positions.
#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "group_commands.h"
#include "rdmq/cli/output.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::cli::admin {
namespace {

using client::TopicPartition;
using nlohmann::ordered_json;

enum class Target { kEarliest, kLatest, kOffset, kDatetime, kShift };

struct ResetSpec {
  Target target = Target::kEarliest;
  int64_t value = 0;  // the offset, the timestamp (ms) or the shift
  // Topic -> the partitions named (empty: every partition).
  std::map<std::string, std::set<int32_t>> topics;
};

struct PlannedReset {
  TopicPartition tp;
  int64_t current = -1;  // committed now; -1 for none
  int64_t next = 0;      // what --execute commits
  int64_t log_start = 0;
  int64_t log_end = 0;
};

// --topic T or T:P,P,...
Status AddTopic(const std::string& arg, ResetSpec* spec) {
  const size_t colon = arg.rfind(':');
  const std::string topic = arg.substr(0, colon);
  if (topic.empty()) return UsageError("--topic '" + arg + "': no topic name (want TOPIC or TOPIC:P,P,...)");
  auto& parts = spec->topics[topic];
  if (colon == std::string::npos) return Status::Ok();
  const std::string list = arg.substr(colon + 1);
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    const std::string one =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    auto n = ParseInt(one, "--topic " + arg + ": partition", 0, 4095);
    if (!n.ok()) return n.status();
    parts.insert(static_cast<int32_t>(*n));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Status::Ok();
}

Result<ResetSpec> ParseSpec(const Subcommand& sc, const ParsedArgs& a) {
  ResetSpec spec;
  int targets = 0;
  if (a.Has("to-earliest")) {
    ++targets;
    spec.target = Target::kEarliest;
  }
  if (a.Has("to-latest")) {
    ++targets;
    spec.target = Target::kLatest;
  }
  if (auto v = a.Get("to-offset")) {
    ++targets;
    spec.target = Target::kOffset;
    RDMQ_ASSIGN_OR_RETURN(spec.value, ParseInt(*v, "--to-offset", INT64_MIN, INT64_MAX));
    if (spec.value < 0) {
      return UsageError("--to-offset " + *v +
                        ": an offset is 0 or more (to move back from the committed offset, " +
                        "use --shift-by " + *v + ")");
    }
  }
  if (auto v = a.Get("to-datetime")) {
    ++targets;
    spec.target = Target::kDatetime;
    RDMQ_ASSIGN_OR_RETURN(spec.value, ParseDateTimeMs(*v, "--to-datetime"));
  }
  if (auto v = a.Get("shift-by")) {
    ++targets;
    spec.target = Target::kShift;
    RDMQ_ASSIGN_OR_RETURN(spec.value, ParseInt(*v, "--shift-by", -INT64_MAX, INT64_MAX));
  }
  if (targets != 1) {
    return UsageError(std::string(targets == 0 ? "group reset-offsets: no new position given; give one of "
                                               : "group reset-offsets: give only one of ") +
                      "--to-earliest, --to-latest, --to-offset N, --to-datetime ISO8601, --shift-by N; " +
                      sc.spec.SeeHelp());
  }
  if (a.Has("dry-run") && a.Has("execute"))
    return UsageError("group reset-offsets: --dry-run and --execute exclude each other; " +
                      sc.spec.SeeHelp());
  const auto topics = a.GetAll("topic");
  if (topics.empty())
    return UsageError("group reset-offsets: name the partitions with --topic TOPIC[:P,P...]; " +
                      sc.spec.SeeHelp());
  for (const auto& t : topics) RDMQ_RETURN_IF_ERROR(AddTopic(t, &spec));
  return spec;
}

int64_t Clamp(int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); }

// current + shift without overflow.
int64_t Shifted(int64_t current, int64_t shift) {
  if (shift > 0 && current > INT64_MAX - shift) return INT64_MAX;
  return current + shift;  // current >= 0 and shift > -INT64_MAX: cannot underflow
}

// The plan for every named partition. `*usage` tells a bad request (unknown topic or partition,
// a shift with nothing committed) from a failed one.
Result<std::vector<PlannedReset>> Plan(client::AdminClient& admin, const std::string& group,
                                       const ResetSpec& spec, bool* usage) {
  std::vector<PlannedReset> plan;
  for (const auto& [topic, only] : spec.topics) {
    auto t = admin.DescribeTopic(topic);
    if (!t.ok()) {
      *usage = t.status().is(Errc::kNotFound);
      return t.status().WithContext("--topic " + topic);
    }
    std::set<int32_t> left = only;
    for (const auto& p : t->partitions) {
      if (!only.empty() && left.erase(p.partition) == 0) continue;
      plan.push_back({{topic, p.partition}, -1, 0, p.log_start_offset, p.high_watermark});
    }
    if (!left.empty()) {
      *usage = true;
      std::string what = "--topic " + topic;
      what += ": topic " + topic + " has no partition " + std::to_string(*left.begin());
      what += " (it has " + std::to_string(t->partitions.size()) + ")";
      return UsageError(what);
    }
  }
  std::vector<TopicPartition> tps;
  tps.reserve(plan.size());
  for (const auto& p : plan) tps.push_back(p.tp);
  auto committed = admin.ListGroupOffsets(group, tps);
  if (!committed.ok()) return committed.status().WithContext("fetch the committed offsets");
  for (auto& p : plan) {
    if (auto it = committed->find(p.tp); it != committed->end()) p.current = it->second.offset;
    switch (spec.target) {
      case Target::kEarliest:
        p.next = p.log_start;
        break;
      case Target::kLatest:
        p.next = p.log_end;
        break;
      case Target::kOffset:
        p.next = spec.value;
        break;
      case Target::kDatetime: {
        auto o = admin.OffsetForTimestamp(p.tp, spec.value);
        if (!o.ok()) {
          return o.status().WithContext("find the offset of " + FormatTimestampMs(spec.value) + " in " +
                                        p.tp.topic + "/" + std::to_string(p.tp.partition));
        }
        p.next = *o < 0 ? p.log_end : *o;  // nothing that recent: the end
        break;
      }
      case Target::kShift:
        if (p.current < 0) {
          *usage = true;
          return UsageError("--shift-by: group " + group + " has no committed offset for " + p.tp.topic +
                            "/" + std::to_string(p.tp.partition) +
                            " to shift from; reset it with --to-earliest, --to-latest or --to-offset first");
        }
        p.next = Shifted(p.current, spec.value);
        break;
    }
    p.next = Clamp(p.next, p.log_start, p.log_end);
  }
  return plan;
}

}  // namespace

int GroupResetOffsets(const Subcommand& sc, const ParsedArgs& a) {
  const std::string& group = a.positional()[0];
  auto spec = ParseSpec(sc, a);
  if (!spec.ok()) return Usage(spec.status());
  const bool execute = a.Has("execute");
  int code = 0;
  auto admin = Connect(a, &code);
  if (!admin) return code;
  const std::string what = "group reset-offsets " + group;

  // A group with members would overwrite the new offsets; the broker refuses the commit too.
  auto described = admin->DescribeGroup(group);
  if (described.ok() && !described->members.empty()) {
    std::cerr << "rdmq: " << what << ": the group has " << described->members.size() << " active member"
              << (described->members.size() == 1 ? "" : "s") << " (state " << described->state
              << "); offsets can be reset only while no consumer is in the group: stop them first\n";
    return kExitError;
  }
  if (!described.ok() && !described.status().is(Errc::kNotFound)) return Fail(what, described.status());

  bool usage = false;
  auto plan = Plan(*admin, group, *spec, &usage);
  if (!plan.ok()) {
    const int failed = Fail(what, plan.status());
    return usage ? kExitUsage : failed;
  }

  if (execute) {
    std::map<TopicPartition, int64_t> offsets;
    for (const auto& p : *plan) offsets[p.tp] = p.next;
    if (Status s = admin->CommitGroupOffsets(group, offsets); !s.ok()) {
      const int failed = Fail(what + ": commit", s);
      if (s.is(protocol::WireError::kUnknownMemberId))
        std::cerr << "rdmq: a consumer joined the group meanwhile; nothing was committed\n";
      return failed;
    }
  }

  if (a.Has("json")) {
    ordered_json parts = ordered_json::array();
    for (const auto& p : *plan) {
      ordered_json j;
      j["topic"] = p.tp.topic;
      j["partition"] = p.tp.partition;
      j["current_offset"] = p.current < 0 ? ordered_json(nullptr) : ordered_json(p.current);
      j["new_offset"] = p.next;
      j["log_start_offset"] = p.log_start;
      j["log_end_offset"] = p.log_end;
      parts.push_back(std::move(j));
    }
    std::cout << ordered_json{{"group", group}, {"executed", execute}, {"partitions", std::move(parts)}}.dump(
                     2)
              << "\n";
    return kExitOk;
  }
  Table t({"TOPIC", "PARTITION", "CURRENT", "NEW", "LOG START", "LOG END"},
          {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  for (const auto& p : *plan) {
    t.AddRow({p.tp.topic, std::to_string(p.tp.partition), OrDash(p.current), std::to_string(p.next),
              std::to_string(p.log_start), std::to_string(p.log_end)});
  }
  t.Print(std::cout);
  if (execute) {
    std::cout << "\ncommitted the new offsets of group " << group << " (" << plan->size() << " partition"
              << (plan->size() == 1 ? "" : "s") << ")\n";
  } else {
    std::cout << "\ndry run: nothing committed; add --execute to commit these offsets\n";
  }
  return kExitOk;
}

CommandSpec GroupResetOffsetsSpec() {
  return CommandSpec{
      .path = "rdmq group reset-offsets",
      .usage =
          "GROUP --topic TOPIC[:P,P...]... (--to-earliest | --to-latest | --to-offset N |\n"
          "       --to-datetime ISO8601 | --shift-by N) [--dry-run | --execute] [options]",
      .summary = "Move a group's committed offsets (prints the plan; commits it with --execute).",
      .description =
          "Plans a new committed offset for each partition named with --topic (every partition of\n"
          "the topic, or the ones listed after a colon) and prints it: topic, partition, the\n"
          "offset committed now ('-' for none), the new one, and the log's ends. New offsets are\n"
          "clamped to [log start, log end]. --dry-run is the default: nothing changes until the\n"
          "command is run again with --execute, which commits every new offset at once (all or\n"
          "none). --to-datetime takes the first record at or after the time (the log end when no\n"
          "record is that recent); a time without a zone is UTC. --shift-by moves the committed\n"
          "offset by N (negative: back) and needs one to exist.\n"
          "Only a group without members can be reset: stop its consumers first (a running\n"
          "consumer would commit its own positions over the new offsets); the command refuses\n"
          "otherwise, even as a dry run.\n"
          "Exit status: 0 done, 1 the group has members or the broker failed, 2 bad command line\n"
          "(including an unknown topic or partition, or --shift-by where nothing is committed).",
      .options = WithGlobals({
          {"topic", 't', "TOPIC[:P,P...]",
           "the partitions to reset: a whole topic, or some of its\npartitions; repeatable", true},
          {"to-earliest", 0, "", "to each partition's log start"},
          {"to-latest", 0, "", "to each partition's log end (skip everything there now)"},
          {"to-offset", 0, "N", "to offset N (clamped to the log's ends)"},
          {"to-datetime", 0, "ISO8601", "to the first record at or after this time (2026-11-21T10:00:00Z)"},
          {"shift-by", 0, "N", "by N from the committed offset (negative: back)"},
          {"dry-run", 0, "", "print the plan only (the default)"},
          {"execute", 0, "", "commit the plan"},
      }),
      .examples =
          {"rdmq group reset-offsets billing --topic orders --to-earliest",
           "rdmq group reset-offsets billing --topic orders --to-earliest --execute",
           "rdmq group reset-offsets billing --topic orders:0,2 --shift-by -100 --execute",
           "rdmq group reset-offsets billing -t orders --to-datetime 2026-11-21T10:00:00Z --execute --json"},
      .min_positional = 1,
      .max_positional = 1};
}

}  // namespace rdmq::cli::admin
