// A small simulation of consumer clients around one Group: each client heartbeats with what it
// owns and applies the assignment it gets back (optionally keeping revoked partitions for a few
// heartbeats, as a slow onPartitionsRevoked would). After every heartbeat the simulation checks
// that no partition is owned by two clients.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rdmq/group/group.h"

namespace rdmq::group::test {

using namespace std::chrono_literals;
using PartSet = std::set<TopicPartition>;

struct Client {
  std::string name;
  std::string member_id;
  std::string instance_id;
  int32_t epoch = 0;
  std::vector<std::string> topics;
  std::string regex;
  std::string assignor;
  PartSet owned;
  int revoke_delay = 0;                    // heartbeats a revoked partition is still held
  std::map<TopicPartition, int> revoking;  // partition -> heartbeats left
  bool alive = true;                       // heartbeats in Round()
  int revoked = 0;                         // partitions it gave up, in all
  int gained = 0;                          // partitions it took, in all
  HeartbeatResult last;
};

class Sim {
 public:
  explicit Sim(TopicCounts topics, GroupConfig config = {})
      : group_("g", std::move(config)), topics_(std::move(topics)) {}

  Group& group() { return group_; }
  TopicCounts& topics() { return topics_; }
  TimePoint now() const { return now_; }
  void Advance(std::chrono::milliseconds d) { now_ += d; }

  Client& Add(const std::string& name, std::vector<std::string> topics, std::string assignor = "",
              std::string instance_id = "");
  Client& operator[](const std::string& name) { return clients_.at(name); }

  // One heartbeat of `name`; applies the response (an error resets the client to a join).
  HeartbeatResult Beat(const std::string& name);
  // A leave (-1) or a static member's temporary leave (-2); the client stops heartbeating.
  HeartbeatResult Leave(const std::string& name, int32_t epoch = kLeaveEpoch);
  // A client that stops heartbeating (a crash): it no longer counts as owning anything.
  void Kill(const std::string& name);

  // Every alive client heartbeats once, then time advances by `step` and the group ticks.
  void Round(std::chrono::milliseconds step = 100ms);
  // Rounds until the group is Stable and every alive client owns exactly its assignment; returns
  // the rounds it took, or -1 after `max_rounds`.
  int RunUntilStable(int max_rounds = 50);

  // Every partition of `topic` owned by exactly one alive client.
  bool OwnedExactlyOnce(const std::vector<std::string>& topics) const;
  // Called after every heartbeat with the client that heartbeat.
  std::function<void(const Client&)> observer;

 private:
  void CheckExclusive() const;

  Group group_;
  TopicCounts topics_;
  TimePoint now_{std::chrono::seconds(1000)};
  std::map<std::string, Client> clients_;
};

}  // namespace rdmq::group::test
