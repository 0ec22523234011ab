// ClassicGroup under random clients: joins (dynamic, static, MEMBER_ID_REQUIRED), syncs,
// heartbeats, metadata changes, leaves, crashes and restarts, with random time steps. After every
// step: no token is answered twice and nothing due is left unprocessed. At the end, with every
// client stopped: every token has been answered and the group is empty again.
#include <catch2/catch.hpp>
#include <random>

#include "classic_harness.h"
#include "support/test_util.h"

namespace rdmq::group {
namespace {

using namespace std::chrono_literals;
using test::Harness;

struct Client {
  std::string name;
  std::string instance;  // static for some
  bool running = false;
  std::string member_id;
  int32_t generation = -1;
  std::optional<Token> join;
  std::optional<Token> sync;
  bool synced = false;  // has its assignment for `generation`
  bool leader = false;
  std::vector<std::string> members;  // the leader's list
  int topics = 1;                    // its subscription: t0..t<topics-1>
};

ClassicJoinRequest JoinFor(const Client& c) {
  std::vector<std::string> topics;
  for (int i = 0; i < c.topics; ++i) topics.push_back("t" + std::to_string(i));
  auto r = Harness::Request(c.name, topics, {"range", "roundrobin"}, c.instance);
  r.member_id = c.member_id;
  r.require_known_member_id = true;
  r.supports_skip_assignment = true;
  return r;
}

TEST_CASE("classic: random clients never get two answers or none", "[group][classic][random]") {
  const uint64_t seed = rdmq::test::TestSeed();
  std::mt19937_64 rng(seed);
  const int trials = rdmq::test::Trials(20, 4);
  for (int trial = 0; trial < trials; ++trial) {
    auto cfg = Harness::DefaultConfig();
    cfg.initial_rebalance_delay = std::chrono::milliseconds(rng() % 2 == 0 ? 0 : 3000);
    cfg.max_size = rng() % 3 == 0 ? 3 : 0;
    Harness h(cfg);
    std::vector<Client> clients(5);
    for (size_t i = 0; i < clients.size(); ++i) {
      clients[i].name = "c" + std::to_string(i);
      if (i % 2 == 1) clients[i].instance = "inst" + std::to_string(i);
    }
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
    int32_t last_generation = 0;

    for (int step = 0; step < 400; ++step) {
      Client& c = clients[static_cast<size_t>(pick(static_cast<int>(clients.size())))];
      // Take in the answers the client was waiting for.
      if (c.join && h.Answered(*c.join)) {
        const auto& r = h.JoinAnswer(*c.join);
        c.join.reset();
        if (r.ok()) {
          c.member_id = r.member_id;
          c.generation = r.generation_id;
          c.leader = r.leader_id == r.member_id && !r.skip_assignment;
          c.members.clear();
          for (const auto& m : r.members) c.members.push_back(m.member_id);
          c.synced = false;
        } else if (r.status.is(ClassicErrc::kMemberIdRequired)) {
          c.member_id = r.member_id;
        } else {
          c.member_id.clear();
          c.generation = -1;
        }
      }
      if (c.sync && h.Answered(*c.sync)) {
        c.synced = h.SyncAnswer(*c.sync).ok();
        if (!c.synced) c.generation = -1;
        c.sync.reset();
      }
      const int action = pick(10);
      if (!c.running) {
        if (action < 4) {  // (re)start: a fresh process, no member id
          Client fresh;
          fresh.name = c.name;
          fresh.instance = c.instance;
          c = std::move(fresh);
          c.running = true;
          c.topics = 1 + pick(2);
          c.join = h.Join(JoinFor(c));
        }
      } else if (action == 0) {  // crash: its waiting requests stay with the group
        c.running = false;
      } else if (action == 1 && !c.member_id.empty()) {
        h.Leave({{c.member_id, c.instance}});
        c.running = false;
      } else if (c.join || c.sync) {
        // waiting
      } else if (c.generation < 0 || action == 2) {
        if (action == 2) c.topics = 1 + pick(2);
        c.join = h.Join(JoinFor(c));
      } else if (!c.synced) {
        ClassicSyncRequest s{c.member_id, c.instance, c.generation, "consumer", "", {}};
        if (c.leader) {
          for (const auto& m : c.members) s.assignments.push_back({m, test::AssignmentBytes({{"t0", 0}})});
        }
        c.sync = h.Sync(s);
      } else {
        Status s = h.Heartbeat(c.member_id, c.generation, c.instance);
        if (!s.ok()) c.generation = -1;
        if (s.is(ClassicErrc::kUnknownMemberId) || s.is(ClassicErrc::kFencedInstanceId)) c.member_id.clear();
      }
      if (pick(3) == 0) h.Advance(std::chrono::milliseconds(pick(4000)));
      auto next = h.g.NextDeadline();
      INFO("seed " << seed << " trial " << trial << " step " << step);
      REQUIRE((!next || *next > h.now));
      REQUIRE(h.g.generation_id() >= last_generation);
      last_generation = h.g.generation_id();
      REQUIRE(h.g.state() != ClassicState::kDead);
    }
    // Everyone stops: within the longest timeout (new members: 5 minutes) every waiting request
    // is answered, every member expires and the group is Empty.
    h.RunUntil(h.now + std::chrono::minutes(11));
    INFO("seed " << seed << " trial " << trial);
    for (Token t = 1; t < h.next; ++t) CHECK(h.Answered(t));
    CHECK(h.g.state() == ClassicState::kEmpty);
    CHECK(h.g.empty());
    CHECK_FALSE(h.g.NextDeadline());
  }
}

}  // namespace
}  // namespace rdmq::group
