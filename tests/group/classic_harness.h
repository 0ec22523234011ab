// A harness for ClassicGroup tests: simulated time, tokens handed out in order, every answer
// (immediate or a completion) recorded once per token, and a check that no token is answered
// twice.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rdmq/group/classic.h"
#include "rdmq/group/consumer_protocol.h"
#include "support/test_util.h"

namespace rdmq::group::test {

using namespace std::chrono_literals;

struct Harness {
  explicit Harness(ClassicConfig config = DefaultConfig()) : g("g", std::move(config)) {}

  static ClassicConfig DefaultConfig() {
    ClassicConfig c;
    c.initial_rebalance_delay = 3000ms;
    c.min_session_timeout = 1000ms;
    c.max_session_timeout = 60000ms;
    c.member_id_salt = "s";
    return c;
  }

  // A consumer's JoinGroup: protocol type "consumer", each protocol's metadata the subscription.
  static ClassicJoinRequest Request(const std::string& client, std::vector<std::string> topics,
                                    std::vector<std::string> protocols = {"range"},
                                    const std::string& instance = "") {
    ClassicJoinRequest r;
    r.client_id = client;
    r.client_host = "/10.0.0.1";
    r.instance_id = instance;
    r.protocol_type = "consumer";
    ConsumerSubscription s;
    s.topics = std::move(topics);
    for (const auto& p : protocols) r.protocols.push_back({p, EncodeConsumerSubscription(s, 1)});
    r.session_timeout = 10s;
    r.rebalance_timeout = 30s;
    return r;
  }

  // Sends a JoinGroup; its answer, immediate or later, is recorded under the returned token.
  Token Join(const ClassicJoinRequest& r) {
    const Token t = next++;
    auto out = g.Join(t, r, now);
    if (out) Record(t, *out);
    Drain();
    return t;
  }
  Token Sync(const ClassicSyncRequest& r) {
    const Token t = next++;
    auto out = g.Sync(t, r, now);
    if (out) Record(t, *out);
    Drain();
    return t;
  }
  Status Heartbeat(const std::string& member, int32_t generation, const std::string& instance = "") {
    Status s = g.Heartbeat({member, instance, generation}, now);
    Drain();
    return s;
  }
  ClassicLeaveResponse Leave(std::vector<ClassicLeaveMember> members) {
    auto out = g.Leave(members, now);
    Drain();
    return out;
  }
  void Advance(std::chrono::milliseconds d) {
    now += d;
    g.Tick(now);
    Drain();
  }
  // Runs Tick at each deadline up to `until` (what the broker's timer thread does).
  void RunUntil(TimePoint until) {
    for (;;) {
      auto next_deadline = g.NextDeadline();
      if (!next_deadline || *next_deadline > until) break;
      now = std::max(now, *next_deadline);
      g.Tick(now);
      Drain();
    }
    now = until;
  }

  bool Answered(Token t) const { return answers.count(t) != 0; }
  const ClassicJoinResponse& JoinAnswer(Token t) const {
    INFO("token " << t);
    REQUIRE(Answered(t));
    REQUIRE(std::holds_alternative<ClassicJoinResponse>(answers.at(t)));
    return std::get<ClassicJoinResponse>(answers.at(t));
  }
  const ClassicSyncResponse& SyncAnswer(Token t) const {
    INFO("token " << t);
    REQUIRE(Answered(t));
    REQUIRE(std::holds_alternative<ClassicSyncResponse>(answers.at(t)));
    return std::get<ClassicSyncResponse>(answers.at(t));
  }

  void Drain() {
    for (auto& c : g.TakeCompletions()) Record(c.token, std::move(c.response));
  }
  void Record(Token t, ClassicResponse r) {
    INFO("token " << t << " answered twice");
    REQUIRE(answers.count(t) == 0);
    REQUIRE(t < next);
    answers.emplace(t, std::move(r));
  }

  ClassicGroup g;
  TimePoint now = TimePoint{} + std::chrono::hours(1);
  Token next = 1;
  std::map<Token, ClassicResponse> answers;
};

// What a consumer client keeps.
struct Member {
  std::string id;
  std::string instance;
  int32_t generation = -1;
  std::string leader;
};

// The assignment bytes a leader sends for these partitions.
inline std::string AssignmentBytes(const std::vector<TopicPartition>& tps) {
  ConsumerAssignment a;
  a.partitions = tps;
  return EncodeConsumerAssignment(a, 1);
}

inline std::vector<TopicPartition> AssignedPartitions(const std::string& bytes) {
  if (bytes.empty()) return {};
  auto a = ParseConsumerAssignment(bytes);
  REQUIRE(a.ok());
  return a->partitions;
}

// Waits (ticking at each deadline, at most `limit` of simulated time) until every token has an
// answer.
inline void AwaitAll(Harness& h, const std::vector<Token>& tokens, std::chrono::milliseconds limit = 120s) {
  const TimePoint until = h.now + limit;
  auto all = [&] {
    return std::all_of(tokens.begin(), tokens.end(), [&](Token t) { return h.Answered(t); });
  };
  while (!all()) {
    auto next = h.g.NextDeadline();
    REQUIRE(next);
    REQUIRE(*next <= until);
    h.now = std::max(h.now, *next);
    h.g.Tick(h.now);
    h.Drain();
  }
}

// The rest of a rebalance once JoinGroups are in flight: wait for their answers, then every
// follower sends SyncGroup, then the leader, which deals `partitions` partitions of topic "t" to
// the members in member id order. Returns member id -> its assignment, as each member received.
inline std::map<std::string, std::vector<TopicPartition>> CompleteRebalance(Harness& h,
                                                                            std::vector<Member*> members,
                                                                            const std::vector<Token>& joins,
                                                                            int32_t partitions = 6) {
  AwaitAll(h, joins);
  const Member* leader = nullptr;
  std::vector<std::string> ids;
  for (size_t i = 0; i < members.size(); ++i) {
    const auto& r = h.JoinAnswer(joins[i]);
    INFO(r.status.ToString());
    REQUIRE(r.ok());
    members[i]->id = r.member_id;
    members[i]->generation = r.generation_id;
    members[i]->leader = r.leader_id;
    if (r.leader_id == r.member_id) {
      REQUIRE(leader == nullptr);
      leader = members[i];
      REQUIRE(r.members.size() == members.size());
      for (const auto& m : r.members) ids.push_back(m.member_id);
    } else {
      CHECK(r.members.empty());
    }
  }
  REQUIRE(leader != nullptr);
  std::sort(ids.begin(), ids.end());
  std::map<std::string, std::vector<TopicPartition>> plan;
  for (int32_t p = 0; p < partitions; ++p) plan[ids[static_cast<size_t>(p) % ids.size()]].push_back({"t", p});
  std::vector<Token> syncs(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] == leader) continue;
    syncs[i] = h.Sync({members[i]->id, members[i]->instance, members[i]->generation, "consumer", "", {}});
    CHECK_FALSE(h.Answered(syncs[i]));  // followers wait for the leader
  }
  ClassicSyncRequest ls{leader->id, leader->instance, leader->generation, "consumer", "", {}};
  for (const auto& [id, tps] : plan) ls.assignments.push_back({id, AssignmentBytes(tps)});
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] == leader) syncs[i] = h.Sync(ls);
  }
  std::map<std::string, std::vector<TopicPartition>> got;
  for (size_t i = 0; i < members.size(); ++i) {
    const auto& r = h.SyncAnswer(syncs[i]);
    INFO(r.status.ToString());
    REQUIRE(r.ok());
    got[members[i]->id] = AssignedPartitions(r.assignment);
  }
  CHECK(h.g.state() == ClassicState::kStable);
  return got;
}

}  // namespace rdmq::group::test
