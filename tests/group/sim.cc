#include "sim.h"

namespace rdmq::group::test {

Client& Sim::Add(const std::string& name, std::vector<std::string> topics, std::string assignor,
                 std::string instance_id) {
  Client c;
  c.name = name;
  c.topics = std::move(topics);
  c.assignor = std::move(assignor);
  c.instance_id = std::move(instance_id);
  return clients_[name] = std::move(c);
}

HeartbeatResult Sim::Beat(const std::string& name) {
  Client& c = clients_.at(name);
  c.alive = true;
  HeartbeatRequest req;
  req.member_id = c.member_id;
  req.instance_id = c.instance_id;
  req.client_id = name;
  req.member_epoch = c.epoch;
  req.topics = c.topics;
  req.topic_regex = c.regex;
  req.assignor = c.assignor;
  req.owned.assign(c.owned.begin(), c.owned.end());
  req.session_timeout = 3000ms;
  req.rebalance_timeout = 5000ms;
  HeartbeatResult r = group_.Heartbeat(req, now_, topics_);
  c.last = r;
  if (!r.ok()) {
    // Fenced or unknown: the partitions are lost; rejoin on the next heartbeat.
    c.revoked += static_cast<int>(c.owned.size());
    c.owned.clear();
    c.revoking.clear();
    c.epoch = 0;
    if (r.status.is(GroupErrc::kUnknownMemberId)) c.member_id.clear();
  } else {
    c.member_id = r.member_id;
    c.epoch = r.member_epoch;
    const PartSet assigned(r.assignment.begin(), r.assignment.end());
    // Start revoking what is no longer assigned; age what is being revoked.
    for (const TopicPartition& tp : c.owned) {
      if (c.revoke_delay > 0 && assigned.count(tp) == 0 && c.revoking.count(tp) == 0) {
        c.revoking[tp] = c.revoke_delay + 1;
      }
    }
    for (auto it = c.revoking.begin(); it != c.revoking.end();) {
      if (assigned.count(it->first) != 0 || --it->second <= 0) {
        it = c.revoking.erase(it);
      } else {
        ++it;
      }
    }
    PartSet next = assigned;
    for (const auto& [tp, left] : c.revoking) next.insert(tp);
    for (const TopicPartition& tp : c.owned) c.revoked += next.count(tp) == 0 ? 1 : 0;
    for (const TopicPartition& tp : next) c.gained += c.owned.count(tp) == 0 ? 1 : 0;
    c.owned = std::move(next);
  }
  CheckExclusive();
  if (observer) observer(c);
  return r;
}

HeartbeatResult Sim::Leave(const std::string& name, int32_t epoch) {
  Client& c = clients_.at(name);
  HeartbeatRequest req;
  req.member_id = c.member_id;
  req.instance_id = c.instance_id;
  req.member_epoch = epoch;
  HeartbeatResult r = group_.Heartbeat(req, now_, topics_);
  c.revoked += static_cast<int>(c.owned.size());
  c.owned.clear();
  c.revoking.clear();
  c.alive = false;
  c.epoch = 0;
  return r;
}

void Sim::Kill(const std::string& name) {
  Client& c = clients_.at(name);
  c.owned.clear();
  c.revoking.clear();
  c.alive = false;
}

void Sim::Round(std::chrono::milliseconds step) {
  for (auto& [name, c] : clients_) {
    if (c.alive) Beat(name);
  }
  now_ += step;
  group_.Tick(now_, topics_);
}

int Sim::RunUntilStable(int max_rounds) {
  for (int round = 0; round < max_rounds; ++round) {
    Round();
    if (group_.Describe().state != GroupState::kStable) continue;
    bool settled = true;
    for (const auto& [name, c] : clients_) {
      if (c.alive &&
          (c.owned != PartSet(c.last.assignment.begin(), c.last.assignment.end()) || !c.revoking.empty())) {
        settled = false;
      }
    }
    if (settled) return round + 1;
  }
  return -1;
}

bool Sim::OwnedExactlyOnce(const std::vector<std::string>& topics) const {
  std::map<TopicPartition, int> count;
  for (const auto& [name, c] : clients_) {
    if (!c.alive) continue;
    for (const auto& tp : c.owned) ++count[tp];
  }
  size_t expected = 0;
  for (const std::string& t : topics) {
    int32_t n = topics_.at(t);
    expected += static_cast<size_t>(n);
    for (int32_t p = 0; p < n; ++p) {
      if (count[{t, p}] != 1) return false;
    }
  }
  return count.size() == expected;
}

void Sim::CheckExclusive() const {
  std::map<TopicPartition, std::string> by;
  for (const auto& [name, c] : clients_) {
    if (!c.alive) continue;
    for (const auto& tp : c.owned) {
      auto [it, fresh] = by.emplace(tp, name);
      INFO(tp.topic << "-" << tp.partition << " owned by " << it->second << " and " << name);
      REQUIRE(fresh);
    }
  }
}

}  // namespace rdmq::group::test
