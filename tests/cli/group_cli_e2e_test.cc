// The consumer-group commands against a real broker, each tool in its own process: rdmq group
// list/describe/delete/reset-offsets (text and --json, dry runs, every kind of target, refusals
// while members are active, bad input), and rdmq-consume -g as a group member with --commit.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/cli_fixture.h"

namespace rdmq::test {
namespace {

using nlohmann::json;

std::string Lines(int from, int to) {
  std::string out;
  for (int i = from; i <= to; ++i) out += std::to_string(i) + "\n";
  return out;
}

std::vector<int> Numbers(const std::string& text) {
  std::vector<int> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(std::stoi(line));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> Range(int from, int to) {
  std::vector<int> out;
  for (int i = from; i <= to; ++i) out.push_back(i);
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "2026-11-21T10:00:00.123Z"
std::string Iso(int64_t ms) {
  const time_t secs = static_cast<time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// topic/partition -> committed offset (-1 for null) from `rdmq group describe --json`.
std::map<int, int64_t> Committed(Fixture& f, const std::string& group) {
  auto r = f.Rdmq({"group", "describe", group, "--json"});
  REQUIRE_RUN(r, 0);
  const json d = ParseJson(r);
  std::map<int, int64_t> out;
  for (const auto& p : d["partitions"])
    out[p["partition"].get<int>()] =
        p["committed_offset"].is_null() ? -1 : p["committed_offset"].get<int64_t>();
  return out;
}

// Runs reset-offsets with --json; returns partition -> new offset.
std::map<int, int64_t> Reset(Fixture& f, std::vector<std::string> args) {
  args.insert(args.begin(), {"group", "reset-offsets"});
  args.push_back("--json");
  auto r = f.Rdmq(args);
  REQUIRE_RUN(r, 0);
  const json plan = ParseJson(r);
  std::map<int, int64_t> out;
  for (const auto& p : plan["partitions"]) out[p["partition"].get<int>()] = p["new_offset"].get<int64_t>();
  return out;
}

TEST_CASE("rdmq-consume -g --commit -e twice: the second run prints only what is new", "[e2e][cli][group]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "events", "--partitions", "3"}), 0);
  REQUIRE_RUN(f.Produce({"events"}, Lines(1, 50)), 0);

  auto r = f.Consume({"-g", "etl", "--commit", "-e", "events"});
  REQUIRE_RUN(r, 0);
  CHECK(Numbers(r.out) == Range(1, 50));
  REQUIRE_RUN(f.Produce({"events"}, Lines(51, 60)), 0);
  r = f.Consume({"-g", "etl", "--commit", "-e", "events"});
  REQUIRE_RUN(r, 0);
  CHECK(Numbers(r.out) == Range(51, 60));
  r = f.Consume({"-g", "etl", "--commit", "-e", "events"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out.empty());

  // The group's commits are what describe shows: everything read, no lag.
  r = f.Rdmq({"group", "describe", "etl", "--json"});
  REQUIRE_RUN(r, 0);
  json d = ParseJson(r);
  CHECK(d["state"] == "Empty");
  CHECK(d["members"].empty());
  // Keyless records spread over the partitions by batch, so under load one partition may get
  // none; a partition without records has no commit and is not listed. Those listed hold all 60.
  REQUIRE_FALSE(d["partitions"].empty());
  CHECK(d["partitions"].size() <= 3);
  int64_t committed = 0;
  for (const auto& p : d["partitions"]) {
    CHECK(p["committed_offset"] == p["log_end_offset"]);
    CHECK(p["lag"] == 0);
    CHECK(p["member"].is_null());
    committed += p["committed_offset"].get<int64_t>();
  }
  CHECK(committed == 60);
  CHECK(d["total_lag"] == 0);

  // -c stops inside a batch: only the printed records count as consumed, with automatic commits
  // (on exit) as with --commit.
  r = f.Consume({"-g", "partial", "-c", "7", "events"});
  REQUIRE_RUN(r, 0);
  std::vector<int> seen = Numbers(r.out);
  CHECK(seen.size() == 7);
  r = f.Consume({"-g", "partial", "--commit", "-c", "5", "events"});
  REQUIRE_RUN(r, 0);
  for (int n : Numbers(r.out)) seen.push_back(n);
  r = f.Consume({"-g", "partial", "--commit", "-e", "events"});
  REQUIRE_RUN(r, 0);
  for (int n : Numbers(r.out)) seen.push_back(n);
  std::sort(seen.begin(), seen.end());
  CHECK(seen == Range(1, 60));

  // Several topics in one group.
  REQUIRE_RUN(f.Rdmq({"topic", "create", "more"}), 0);
  REQUIRE_RUN(f.Produce({"more"}, Lines(61, 70)), 0);
  r = f.Consume({"-g", "both", "--commit", "-e", "-f", "%t %s\\n", "events", "more"});
  REQUIRE_RUN(r, 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 70);
  CHECK(Contains(r.out, "more 61\n"));
  CHECK(Contains(r.out, "events 1\n"));

  // Bad combinations: exit 2 with the reason.
  r = f.Consume({"-g", "etl", "-o", "beginning", "events"});
  REQUIRE_RUN(r, 2);
  CHECK(Contains(r.err, "-o cannot be used with -g"));
  r = f.Consume({"-g", "etl", "-p", "0", "events"});
  REQUIRE_RUN(r, 2);
  r = f.Consume({"--commit", "events"});
  REQUIRE_RUN(r, 2);
  CHECK(Contains(r.err, "--commit needs a consumer group"));
  r = f.Consume({"events", "more"});
  REQUIRE_RUN(r, 2);
  r = f.Consume({"-g", "etl", "-e", "nope"});
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "UNKNOWN_TOPIC"));
}

TEST_CASE("rdmq group list, describe and delete, refused while a member is active", "[e2e][cli][group]") {
  Fixture f;
  auto r = f.Rdmq({"group", "list"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "no groups\n");
  REQUIRE_RUN(f.Rdmq({"topic", "create", "orders", "--partitions", "2"}), 0);
  REQUIRE_RUN(f.Produce({"-p", "0", "orders"}, Lines(1, 8)), 0);
  REQUIRE_RUN(f.Produce({"-p", "1", "orders"}, Lines(9, 12)), 0);
  REQUIRE_RUN(f.Consume({"-g", "billing", "--commit", "-e", "orders"}), 0);
  REQUIRE_RUN(f.Produce({"-p", "1", "orders"}, Lines(13, 15)), 0);

  r = f.Rdmq({"group", "list", "--json"});
  REQUIRE_RUN(r, 0);
  json list = ParseJson(r);
  REQUIRE(list["groups"].size() == 1);
  CHECK(list["groups"][0]["group"] == "billing");
  CHECK(list["groups"][0]["state"] == "Empty");
  CHECK(list["groups"][0]["members"] == 0);
  r = f.Rdmq({"group", "list"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out.rfind("GROUP", 0) == 0);
  CHECK(Contains(r.out, "billing"));

  r = f.Rdmq({"group", "describe", "billing", "--json"});
  REQUIRE_RUN(r, 0);
  json d = ParseJson(r);
  REQUIRE(d["partitions"].size() == 2);
  CHECK(d["partitions"][0]["committed_offset"] == 8);
  CHECK(d["partitions"][0]["log_end_offset"] == 8);
  CHECK(d["partitions"][0]["lag"] == 0);
  CHECK(d["partitions"][1]["committed_offset"] == 4);
  CHECK(d["partitions"][1]["log_end_offset"] == 7);
  CHECK(d["partitions"][1]["lag"] == 3);
  CHECK(d["total_lag"] == 3);
  r = f.Rdmq({"group", "describe", "billing"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out.rfind("group billing  state Empty", 0) == 0);
  CHECK(Contains(r.out, "COMMITTED"));
  CHECK(Contains(r.out, "LOG END"));
  CHECK(Contains(r.out, "LAG"));

  // A member in the background: describe shows it with its assignment; delete and reset refuse.
  r = f.Sh(
      "rdmq-consume -g billing orders > member.out 2> member.err &\n"
      "pid=$!\n"
      "for i in $(seq 1 300); do\n"
      "  rdmq group describe billing --json > describe.json 2>/dev/null\n"
      "  grep -q '\"state\": \"Stable\"' describe.json && grep -q '\"member\": \"' describe.json &&\n"
      "    [ \"$(wc -l < member.out)\" -ge 3 ] && break\n"
      "  sleep 0.1\n"
      "done\n"
      "rdmq group list --json > list.json\n"
      "rdmq group delete billing 2> delete.err; echo \"delete $?\" > codes\n"
      "rdmq group reset-offsets billing --topic orders --to-earliest --execute 2> reset.err\n"
      "echo \"reset $?\" >> codes\n"
      "kill $pid; wait $pid; echo \"member $?\" >> codes\n"
      "cat codes",
      120);
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "delete 1\nreset 1\nmember 0\n");
  const std::string dir = f.tmp().str();
  d = json::parse(ReadFile(dir + "/describe.json"));
  CHECK(d["state"] == "Stable");
  REQUIRE(d["members"].size() == 1);
  const json& m = d["members"][0];
  CHECK(m["client_id"] == "rdmq-consume");
  CHECK(m["topics"] == json::array({"orders"}));
  CHECK(m["assignment"].size() == 2);
  for (const auto& p : d["partitions"]) CHECK(p["member"] == m["member_id"]);
  list = json::parse(ReadFile(dir + "/list.json"));
  CHECK(list["groups"][0]["members"] == 1);
  CHECK(Contains(ReadFile(dir + "/delete.err"), "GROUP_NOT_EMPTY"));
  CHECK(Contains(ReadFile(dir + "/reset.err"), "the group has 1 active member"));
  CHECK(Contains(ReadFile(dir + "/reset.err"), "stop them first"));
  // The member printed the 3 records it had not committed yet (on leaving it commits: lag 0).
  CHECK(Numbers(ReadFile(dir + "/member.out")) == Range(13, 15));
  d = ParseJson(f.Rdmq({"group", "describe", "billing", "--json"}));
  CHECK(d["members"].empty());
  CHECK(d["total_lag"] == 0);

  // Once it left: delete works; the group is gone.
  r = f.Rdmq({"group", "delete", "billing"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "deleted group billing\n");
  r = f.Rdmq({"group", "describe", "billing"});
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "UNKNOWN_GROUP"));
  r = f.Rdmq({"group", "delete", "billing"});
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "UNKNOWN_GROUP"));
  r = f.Rdmq({"group", "delete", "billing", "--if-exists", "--json"});
  REQUIRE_RUN(r, 0);
  CHECK(ParseJson(r)["deleted"].empty());
  CHECK(ParseJson(f.Rdmq({"group", "list", "--json"}))["groups"].empty());
  // Its offsets went with it: a new member starts from the beginning.
  r = f.Consume({"-g", "billing", "-e", "orders"});
  REQUIRE_RUN(r, 0);
  CHECK(Numbers(r.out) == Range(1, 15));
}

TEST_CASE("rdmq group reset-offsets: dry run, execute, every target, clamping", "[e2e][cli][group]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "t", "--partitions", "2"}), 0);
  REQUIRE_RUN(f.Produce({"-p", "0", "t"}, Lines(1, 10)), 0);
  REQUIRE_RUN(f.Produce({"-p", "1", "t"}, Lines(11, 16)), 0);
  // A point in time between the two rounds of records.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const int64_t between = NowMs();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE_RUN(f.Produce({"-p", "0", "t"}, Lines(17, 21)), 0);
  REQUIRE_RUN(f.Produce({"-p", "1", "t"}, Lines(22, 26)), 0);
  const std::map<int, int64_t> ends{{0, 15}, {1, 11}};

  // Dry run (the default) on a group that does not exist yet: the plan, and nothing changes.
  auto r = f.Rdmq({"group", "reset-offsets", "g", "--topic", "t", "--to-latest"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out.rfind("TOPIC", 0) == 0);
  CHECK(Contains(r.out, "CURRENT"));
  CHECK(Contains(r.out, "dry run: nothing committed"));
  r = f.Rdmq({"group", "reset-offsets", "g", "--topic", "t", "--to-latest", "--dry-run", "--json"});
  REQUIRE_RUN(r, 0);
  json plan = ParseJson(r);
  CHECK(plan["executed"] == false);
  REQUIRE(plan["partitions"].size() == 2);
  for (const auto& p : plan["partitions"]) {
    CHECK(p["current_offset"].is_null());
    CHECK(p["new_offset"] == ends.at(p["partition"].get<int>()));
    CHECK(p["log_start_offset"] == 0);
    CHECK(p["log_end_offset"] == ends.at(p["partition"].get<int>()));
  }
  REQUIRE_RUN(f.Rdmq({"group", "describe", "g"}), 1);  // still no such group

  // --execute commits the plan.
  r = f.Rdmq({"group", "reset-offsets", "g", "--topic", "t", "--to-latest", "--execute"});
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.out, "committed the new offsets of group g (2 partitions)"));
  CHECK(Committed(f, "g") == ends);

  // A dry run of another target shows current and new, and changes nothing.
  plan = ParseJson(f.Rdmq({"group", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--json"}));
  for (const auto& p : plan["partitions"]) {
    CHECK(p["current_offset"] == ends.at(p["partition"].get<int>()));
    CHECK(p["new_offset"] == 0);
  }
  CHECK(Committed(f, "g") == ends);

  CHECK(Reset(f, {"g", "--topic", "t", "--to-earliest", "--execute"}) ==
        std::map<int, int64_t>{{0, 0}, {1, 0}});
  CHECK(Committed(f, "g") == std::map<int, int64_t>{{0, 0}, {1, 0}});
  // Some partitions only; an offset past the end is clamped to it.
  CHECK(Reset(f, {"g", "--topic", "t:0", "--to-offset", "5", "--execute"}) == std::map<int, int64_t>{{0, 5}});
  CHECK(Reset(f, {"g", "-t", "t:1", "--to-offset", "1000", "--execute"}) == std::map<int, int64_t>{{1, 11}});
  CHECK(Committed(f, "g") == std::map<int, int64_t>{{0, 5}, {1, 11}});
  // Shifts, clamped at both ends.
  CHECK(Reset(f, {"g", "--topic", "t", "--shift-by", "3", "--execute"}) ==
        std::map<int, int64_t>{{0, 8}, {1, 11}});
  CHECK(Reset(f, {"g", "--topic", "t:0,1", "--shift-by", "-9", "--execute"}) ==
        std::map<int, int64_t>{{0, 0}, {1, 2}});
  CHECK(Committed(f, "g") == std::map<int, int64_t>{{0, 0}, {1, 2}});
  // Times: the first record at or after it; before everything: the start; after: the end.
  CHECK(Reset(f, {"g", "--topic", "t", "--to-datetime", Iso(between), "--execute"}) ==
        std::map<int, int64_t>{{0, 10}, {1, 6}});
  CHECK(Reset(f, {"g", "--topic", "t", "--to-datetime", "1970-01-01T00:00:00Z"}) ==
        std::map<int, int64_t>{{0, 0}, {1, 0}});
  CHECK(Reset(f, {"g", "--topic", "t", "--to-datetime", "2200-01-01T00:00:00+01:00"}) == ends);
  CHECK(Committed(f, "g") == std::map<int, int64_t>{{0, 10}, {1, 6}});
  // The group resumes from the reset: only the second round.
  r = f.Consume({"-g", "g", "--commit", "-e", "t"});
  REQUIRE_RUN(r, 0);
  CHECK(Numbers(r.out) == Range(17, 26));
}

TEST_CASE("rdmq group: bad input gives exit 2 with the reason", "[e2e][cli][group]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "t"}), 0);
  REQUIRE_RUN(f.Produce({"t"}, Lines(1, 3)), 0);
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--topic", "nope", "--to-latest"}, "UNKNOWN_TOPIC"},
      {{"--topic", "nope", "--to-latest", "--execute"}, "nope"},
      {{"--topic", "t", "--to-offset", "-5"}, "--to-offset -5: an offset is 0 or more"},
      {{"--topic", "t"}, "no new position given"},
      {{"--topic", "t", "--to-earliest", "--to-latest"}, "give only one of"},
      {{"--topic", "t", "--to-earliest", "--dry-run", "--execute"}, "exclude each other"},
      {{"--to-earliest"}, "--topic"},
      {{"--topic", "t:7", "--to-earliest"}, "has no partition 7"},
      {{"--topic", "t:x", "--to-earliest"}, "partition"},
      {{"--topic", "t", "--to-datetime", "yesterday"}, "YYYY-MM-DD"},
      {{"--topic", "t", "--shift-by", "2"}, "no committed offset"},
      {{"--topic", "t", "--shift-by", "two"}, "--shift-by"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"group", "reset-offsets", "g"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = f.Rdmq(args);
    INFO("args: " << json(args).dump());
    REQUIRE_RUN(r, 2);
    CHECK(Contains(r.err, c.says));
    CHECK(r.out.empty());
  }
  // None of that committed anything.
  REQUIRE_RUN(f.Rdmq({"group", "describe", "g"}), 1);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"group", "reset-offsets"}, {"group", "describe"}, {"group", "delete"}, {"group", "frobnicate"}}) {
    auto r = f.Rdmq(args);
    INFO("args: " << json(args).dump());
    REQUIRE_RUN(r, 2);
  }
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"group", "--help"}, {"group", "reset-offsets", "--help"}, {"group", "describe", "-h"}}) {
    auto r = f.Rdmq(args);
    INFO("args: " << json(args).dump());
    REQUIRE_RUN(r, 0);
    CHECK(r.out.rfind("Usage: rdmq group", 0) == 0);
    CHECK(Contains(r.out, "Examples:"));
  }
  auto r = Run({Bin("rdmq-consume"), "--help"});
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.out, "--commit"));
}

}  // namespace
}  // namespace rdmq::test
