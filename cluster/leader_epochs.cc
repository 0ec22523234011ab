#include "rdmq/cluster/leader_epochs.h"

#include <algorithm>
#include <string>

namespace rdmq::cluster {

Status LeaderEpochs::Observe(int32_t epoch, Offset base) {
  if (epoch < 0) return Status::Ok();
  if (!entries_.empty()) {
    const Entry& last = entries_.back();
    if (epoch == last.epoch) return Status::Ok();
    if (epoch < last.epoch || base < last.start) {
      return Status(Errc::kInvalidArgument, "a batch of leader epoch " + std::to_string(epoch) +
                                                " at offset " + std::to_string(base.value()) +
                                                " after epoch " + std::to_string(last.epoch) +
                                                " from offset " + std::to_string(last.start.value()));
    }
  }
  entries_.push_back({epoch, base});
  return Status::Ok();
}

std::optional<std::pair<int32_t, Offset>> LeaderEpochs::EndOf(int32_t epoch, Offset log_end) const {
  // The last entry whose epoch is not above `epoch`.
  auto after = std::upper_bound(entries_.begin(), entries_.end(), epoch,
                                [](int32_t e, const Entry& x) { return e < x.epoch; });
  if (after == entries_.begin()) return std::nullopt;
  const Entry& known = *std::prev(after);
  return std::pair(known.epoch, after == entries_.end() ? log_end : after->start);
}

void LeaderEpochs::TruncateTo(Offset end) {
  std::erase_if(entries_, [end](const Entry& e) { return e.start >= end; });
}

void LeaderEpochs::ClearBelow(Offset start) {
  // Keep the last entry starting at or below `start` (it spans it) and everything after.
  size_t first = 0;
  while (first + 1 < entries_.size() && entries_[first + 1].start <= start) ++first;
  entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(first));
  if (!entries_.empty() && entries_.front().start < start) entries_.front().start = start;
}

TruncationStep Truncation(const LeaderEpochs& follower, Offset follower_end, Offset follower_start,
                          const std::optional<std::pair<int32_t, Offset>>& leader_answer) {
  if (follower.latest() < 0) return {true, follower_end, -1};  // it knows no epoch: keep its log
  if (!leader_answer) return {true, follower_start, -1};
  const auto [epoch, leader_end] = *leader_answer;
  const auto mine = follower.EndOf(epoch, follower_end);
  if (mine && mine->first == epoch) {
    // Both have `epoch`: they agree up to where the shorter one's records of it end.
    return {true, std::min({leader_end, mine->second, follower_end}), -1};
  }
  // The follower never had `epoch`: ask about its largest epoch below it.
  if (!mine) return {true, follower_start, -1};
  return {false, Offset(0), mine->first};
}

Offset FollowerTruncationPoint(const LeaderEpochs& follower, Offset follower_end, Offset follower_start,
                               const LeaderEpochs& leader, Offset leader_end, int* rounds) {
  int32_t ask = FirstQuestion(follower);
  // Each round asks about an older epoch the follower has, so there are at most as many rounds
  // as it has epochs, plus the last answer.
  for (size_t n = 1; n <= follower.entries().size() + 1; ++n) {
    const auto answer = ask < 0 ? std::nullopt : leader.EndOf(ask, leader_end);
    const TruncationStep step = Truncation(follower, follower_end, follower_start, answer);
    if (step.done || step.ask >= ask) {  // (the second cannot happen; the safe answer if it did)
      if (rounds != nullptr) *rounds = static_cast<int>(n);
      return step.done ? step.truncate_to : follower_start;
    }
    ask = step.ask;
  }
  if (rounds != nullptr) *rounds = static_cast<int>(follower.entries().size() + 1);
  return follower_start;
}

}  // namespace rdmq::cluster
