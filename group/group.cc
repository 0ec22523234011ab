// Group's public calls: each dispatches to the steps in membership.cc, topics.cc and
// reconcile.cc, in the order the protocol needs (topics first, then the membership change, then
// the target, then the member's reconciliation).
#include "rdmq/group/group.h"

#include <algorithm>

#include "group_impl.h"

namespace rdmq::group {

Group::Group(std::string group_id, GroupConfig config)
    : impl_(std::make_unique<Impl>(std::move(group_id), std::move(config))) {}
Group::~Group() = default;
Group::Group(Group&&) noexcept = default;
Group& Group::operator=(Group&&) noexcept = default;

HeartbeatResult Group::Heartbeat(const HeartbeatRequest& request, TimePoint now, const TopicCounts& topics) {
  Impl& g = *impl_;
  g.RefreshTopics(topics);
  g.Expire(now);  // so that the outcome does not depend on when the housekeeper last ticked
  HeartbeatResult result;
  if (request.member_epoch == kLeaveEpoch || request.member_epoch == kStaticLeaveEpoch) {
    result = g.Leave(request, now);
    g.MaybeComputeTarget();
  } else {
    Result<internal::Member*> member = Status(GroupErrc::kInvalidRequest, "member epoch below -2");
    if (request.member_epoch == kJoinEpoch) {
      member = g.Join(request, now);
    } else if (request.member_epoch > 0) {
      member = g.KeepAlive(request, now);
    }
    g.MaybeComputeTarget();
    if (member.ok()) {
      g.Reconcile(**member, request.owned, now);
      result = g.Response(**member);
    } else {
      result.status = member.status();
      result.member_id = request.member_id;
      result.member_epoch = request.member_epoch;
    }
  }
  result.heartbeat_interval = g.config.heartbeat_interval;
  return result;
}

void Group::Tick(TimePoint now, const TopicCounts& topics) {
  impl_->RefreshTopics(topics);
  impl_->Expire(now);
  impl_->MaybeComputeTarget();
}

std::optional<TimePoint> Group::NextDeadline() const {
  std::optional<TimePoint> next;
  for (const auto& [id, m] : impl_->members) {
    TimePoint t = m.SessionDeadline();
    if (m.revoke_deadline) t = std::min(t, *m.revoke_deadline);
    if (!next || t < *next) next = t;
  }
  return next;
}

Status Group::CheckCommit(std::string_view member_id, int32_t member_epoch) const {
  if (member_id.empty()) {
    if (member_epoch == kLeaveEpoch && impl_->members.empty()) return Status::Ok();
    return Status(GroupErrc::kUnknownMemberId, impl_->members.empty()
                                                   ? "a simple commit carries member epoch -1"
                                                   : "a simple commit while the group has members");
  }
  auto it = impl_->members.find(std::string(member_id));
  if (it == impl_->members.end()) {
    return Status(GroupErrc::kUnknownMemberId, "member " + std::string(member_id));
  }
  if (it->second.epoch != member_epoch) {
    return Status(GroupErrc::kStaleMemberEpoch, "member " + it->first + " is at epoch " +
                                                    std::to_string(it->second.epoch) + ", the commit has " +
                                                    std::to_string(member_epoch));
  }
  return Status::Ok();
}

bool Group::empty() const noexcept { return impl_->members.empty(); }
int32_t Group::group_epoch() const noexcept { return impl_->group_epoch; }
const std::string& Group::group_id() const noexcept { return impl_->group_id; }

}  // namespace rdmq::group
