// The cooperative-sticky assignor.
//
// 1. Every member keeps the partitions it owns that still exist and that it still subscribes
//    to (a partition claimed by two members goes to the first in Kafka's member order).
// 2. The partitions nobody keeps go, one at a time, to the least loaded member subscribed to
//    their topic; the partitions with the fewest candidates go first.
// 3. While some member A holds at least two partitions more than a member B it can reach, move
//    partitions along the shortest chain A -> X -> ... -> B in which each member hands one
//    partition to the next member subscribed to its topic (a direct move when A and B share a
//    topic). Each step lowers the sum of squared loads, so this ends; when it ends, no member
//    can give a partition, directly or along a chain, to a member two below it: in particular
//    members with the same subscription differ by at most one partition.
// Only what step 3 moves (and what nobody owned) changes hands, and step 3 moves one partition
// per hop from the most loaded member: in a group with one subscription that is the minimum
// number of moves that balance requires.
#include <algorithm>
#include <deque>
#include <numeric>

#include "assignor_internal.h"

namespace rdmq::group::internal {
namespace {

class Sticky {
 public:
  Sticky(const std::vector<MemberSpec>& members, const TopicCounts& topics)
      : members_(SortedMembers(members)), topics_(topics) {
    const size_t n = members_.size();
    subs_.resize(n);
    has_.resize(n);
    kept_.resize(n);
    per_topic_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      subs_[i] = ExistingTopics(*members_[i], topics);
      for (const std::string& t : subs_[i]) eligible_[t].push_back(i);
    }
  }

  Assignment Run() {
    KeepOwned();
    AssignUnowned();
    while (BalanceStep()) {
    }
    Assignment out;
    for (size_t i = 0; i < members_.size(); ++i) {
      out[members_[i]->member_id].assign(has_[i].begin(), has_[i].end());
    }
    return out;
  }

 private:
  size_t Load(size_t i) const { return has_[i].size(); }

  void Give(const TopicPartition& tp, size_t to) {
    has_[to].insert(tp);
    ++per_topic_[to][tp.topic];
  }
  void Take(const TopicPartition& tp, size_t from) {
    has_[from].erase(tp);
    if (--per_topic_[from][tp.topic] == 0) per_topic_[from].erase(tp.topic);
  }

  void KeepOwned() {
    for (size_t i = 0; i < members_.size(); ++i) {
      for (const TopicPartition& tp : members_[i]->owned) {
        auto it = topics_.find(tp.topic);
        if (it == topics_.end() || tp.partition < 0 || tp.partition >= it->second) continue;
        if (subs_[i].count(tp.topic) == 0) continue;
        if (!claimed_.insert(tp).second) continue;
        Give(tp, i);
        kept_[i].insert(tp);
      }
    }
  }

  void AssignUnowned() {
    struct Free {
      size_t candidates;
      TopicPartition tp;
      bool operator<(const Free& o) const {
        return candidates != o.candidates ? candidates < o.candidates : tp < o.tp;
      }
    };
    std::vector<Free> free;
    for (const auto& [topic, takers] : eligible_) {
      const int32_t count = topics_.at(topic);
      for (int32_t p = 0; p < count; ++p) {
        TopicPartition tp{topic, p};
        if (claimed_.count(tp) == 0) free.push_back({takers.size(), std::move(tp)});
      }
    }
    std::sort(free.begin(), free.end());
    for (const Free& f : free) {
      const std::vector<size_t>& takers = eligible_.at(f.tp.topic);
      size_t best = takers.front();
      for (size_t i : takers) {
        if (Load(i) < Load(best)) best = i;
      }
      Give(f.tp, best);
    }
  }

  // One chain of moves from a most loaded member to a reachable member at least two below it.
  bool BalanceStep() {
    const size_t n = members_.size();
    if (n < 2) return false;
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return Load(a) > Load(b); });
    size_t min_load = Load(order.back());
    for (size_t src : order) {
      if (Load(src) < min_load + 2) return false;
      // Breadth-first over "u holds a partition of a topic v subscribes to".
      std::vector<int> dist(n, -1);
      std::vector<size_t> parent(n, n);
      std::vector<std::string> via(n);
      std::deque<size_t> queue{src};
      dist[src] = 0;
      while (!queue.empty()) {
        size_t u = queue.front();
        queue.pop_front();
        for (const auto& [topic, count] : per_topic_[u]) {
          for (size_t v : eligible_.at(topic)) {
            if (dist[v] >= 0) continue;
            dist[v] = dist[u] + 1;
            parent[v] = u;
            via[v] = topic;
            queue.push_back(v);
          }
        }
      }
      size_t best = n;
      for (size_t v = 0; v < n; ++v) {
        if (v == src || dist[v] < 0 || Load(v) + 2 > Load(src)) continue;
        if (best == n || Load(v) < Load(best) || (Load(v) == Load(best) && dist[v] < dist[best])) best = v;
      }
      if (best == n) continue;
      // From the last hop back, so that every member gives one of the partitions it had.
      for (size_t v = best; v != src; v = parent[v]) Move(parent[v], v, via[v]);
      return true;
    }
    return false;
  }

  // Moves one partition of `topic` from `from` to `to`: one it did not keep from its owned set
  // if it has one (moving that costs no revocation), else its highest.
  void Move(size_t from, size_t to, const std::string& topic) {
    const TopicPartition* pick = nullptr;
    for (auto it = has_[from].rbegin(); it != has_[from].rend(); ++it) {
      if (it->topic != topic) continue;
      if (kept_[from].count(*it) == 0) {
        pick = &*it;
        break;
      }
      if (pick == nullptr) pick = &*it;
    }
    TopicPartition tp = *pick;  // BFS found `from` holding a partition of `topic`
    Take(tp, from);
    Give(tp, to);
  }

  std::vector<const MemberSpec*> members_;
  const TopicCounts& topics_;
  std::vector<std::set<std::string>> subs_;
  std::map<std::string, std::vector<size_t>> eligible_;  // topic -> subscribed members, in order
  std::vector<std::set<TopicPartition>> has_;
  std::vector<std::set<TopicPartition>> kept_;  // what step 1 kept
  std::vector<std::map<std::string, int32_t>> per_topic_;
  std::set<TopicPartition> claimed_;
};

}  // namespace

Assignment StickyAssign(const std::vector<MemberSpec>& members, const TopicCounts& topics) {
  return Sticky(members, topics).Run();
}

}  // namespace rdmq::group::internal
