// ClassicGroup rebalances and timers: preparing a rebalance (with the initial delay for an Empty
// group), completing the join phase (a new generation, the chosen protocol, JoinGroup answers),
// passing the leader's assignment on, and the deadlines that Advance() fires.
#include <algorithm>

#include "classic_impl.h"

namespace rdmq::group {

using internal::ClassicMember;
using std::chrono::milliseconds;

namespace {
// A deadline is never scheduled at `now` itself from a timeout of 0, so Advance always ends.
milliseconds AtLeast1(milliseconds d) { return std::max(d, milliseconds(1)); }
}  // namespace

void ClassicGroup::Impl::MaybePrepareRebalanceOrCompleteJoin(TimePoint now) {
  if (state == ClassicState::kStable || state == ClassicState::kCompletingRebalance ||
      state == ClassicState::kEmpty) {
    PrepareRebalance(now);
  } else {
    MaybeCompleteJoinPhase(now);
  }
}

// The join phase ends early once every member has rejoined, except in the initial rebalance of
// an Empty group, which always waits out its delay.
void ClassicGroup::Impl::MaybeCompleteJoinPhase(TimePoint now) {
  if (state == ClassicState::kPreparingRebalance && AllMembersJoined() &&
      previous_state != ClassicState::kEmpty) {
    CompleteJoin(now);
  }
}

void ClassicGroup::Impl::PrepareRebalance(TimePoint now) {
  // Members waiting for their SyncGroup answer are told to rejoin.
  if (state == ClassicState::kCompletingRebalance) {
    ResetAssignmentsWithError(ClassicErrc::kRebalanceInProgress, now);
  }
  pending_sync.clear();
  sync_deadline.reset();
  const bool initial = state == ClassicState::kEmpty;
  Transition(ClassicState::kPreparingRebalance);
  if (initial) {
    // Kafka's InitialDelayedJoin: wait group.initial.rebalance.delay.ms, and again while new
    // members keep joining, but no longer than the rebalance timeout in all.
    initial_delay = true;
    new_member_added = false;
    initial_delay_step = config.initial_rebalance_delay;
    initial_remaining = std::max(RebalanceTimeout() - config.initial_rebalance_delay, milliseconds(0));
    join_deadline = now + initial_delay_step;
    return;
  }
  initial_delay = false;
  if (AllMembersJoined()) {
    CompleteJoin(now);
  } else {
    join_deadline = now + AtLeast1(RebalanceTimeout());
  }
}

void ClassicGroup::Impl::FireJoinDeadline(TimePoint now) {
  join_deadline.reset();
  if (state != ClassicState::kPreparingRebalance) return;
  if (initial_delay && new_member_added && initial_remaining > milliseconds(0)) {
    new_member_added = false;
    const milliseconds delay = std::min(config.initial_rebalance_delay, initial_remaining);
    initial_remaining = std::max(initial_remaining - initial_delay_step, milliseconds(0));
    initial_delay_step = delay;
    join_deadline = now + delay;
    return;
  }
  CompleteJoin(now);
}

// The join phase ends: dynamic members that did not rejoin are removed (static ones stay until
// their session times out), a joined member leads, the generation advances, the protocol is
// chosen, and every waiting JoinGroup is answered (the leader's with every member's metadata).
void ClassicGroup::Impl::CompleteJoin(TimePoint now) {
  join_deadline.reset();
  initial_delay = false;
  std::vector<std::string> gone;
  for (const auto& [id, m] : members) {
    if (!m.join_token && m.instance_id.empty()) gone.push_back(id);
  }
  for (const auto& id : gone) {
    ClassicSyncResponse sr;
    sr.status = Status(ClassicErrc::kUnknownMemberId, "member " + id + " did not rejoin in time");
    AnswerSync(members.at(id), std::move(sr));
    RemoveMember(id);
  }
  if (state == ClassicState::kDead) return;
  if (!members.empty()) {
    auto current = members.find(leader);
    if (current == members.end() || !current->second.join_token) {
      auto joined = std::find_if(members.begin(), members.end(),
                                 [](const auto& kv) { return kv.second.join_token.has_value(); });
      if (joined == members.end()) {
        // Nobody rejoined (only static members remain): wait another rebalance timeout while
        // their sessions run out.
        join_deadline = now + AtLeast1(RebalanceTimeout());
        return;
      }
      leader = joined->first;
    }
  }
  ++generation;
  pending_sync.clear();
  if (members.empty()) {
    protocol_name.clear();
    Transition(ClassicState::kEmpty);
    return;
  }
  protocol_name = SelectProtocol();
  Transition(ClassicState::kCompletingRebalance);
  for (auto& [id, m] : members) {
    AnswerJoin(m, CurrentGeneration(id, id == leader));
    m.heartbeat_deadline = now + m.session_timeout;
    m.is_new = false;
    pending_sync.insert(id);
  }
  // Members that do not send their SyncGroup within the rebalance timeout are removed.
  sync_deadline = now + AtLeast1(RebalanceTimeout());
}

void ClassicGroup::Impl::PropagateAssignment(TimePoint now) {
  for (auto& [id, m] : members) {
    if (!m.sync_token) continue;
    ClassicSyncResponse r;
    r.protocol_type = protocol_type;
    r.protocol_name = protocol_name;
    r.assignment = m.assignment;
    AnswerSync(m, std::move(r));
    m.heartbeat_deadline = now + m.session_timeout;
  }
}

void ClassicGroup::Impl::ResetAssignmentsWithError(ClassicErrc error, TimePoint now) {
  for (auto& [id, m] : members) {
    m.assignment.clear();
    if (!m.sync_token) continue;
    ClassicSyncResponse r;
    r.status = Status(error, "group " + group_id + " is rebalancing: rejoin");
    AnswerSync(m, std::move(r));
    m.heartbeat_deadline = now + m.session_timeout;
  }
}

void ClassicGroup::Impl::FireSyncDeadline(TimePoint now) {
  sync_deadline.reset();
  if (state != ClassicState::kCompletingRebalance && state != ClassicState::kStable) return;
  if (pending_sync.empty()) return;
  const std::set<std::string> late = pending_sync;
  for (const auto& id : late) {
    auto it = members.find(id);
    if (it == members.end()) continue;
    ClassicSyncResponse sr;
    sr.status = Status(ClassicErrc::kUnknownMemberId, "member " + id + " did not send SyncGroup in time");
    AnswerSync(it->second, std::move(sr));
    RemoveMember(id);
  }
  PrepareRebalance(now);
}

// A member's heartbeat deadline passed. A member waiting for its JoinGroup or SyncGroup answer
// is kept (the rebalance's own timeouts deal with it), unless it is new in this rebalance.
void ClassicGroup::Impl::FireHeartbeat(const std::string& id, TimePoint now) {
  ClassicMember& m = members.at(id);
  m.heartbeat_deadline.reset();
  if (!m.is_new && (m.join_token || m.sync_token)) return;
  RemoveAndRebalance(id, now);
}

void ClassicGroup::Impl::FirePending(const std::string& id, TimePoint now) {
  pending_members.erase(id);
  MaybeCompleteJoinPhase(now);
}

std::optional<TimePoint> ClassicGroup::Impl::Next() const {
  if (state == ClassicState::kDead) return std::nullopt;
  std::optional<TimePoint> next;
  auto consider = [&](const std::optional<TimePoint>& t) {
    if (t && (!next || *t < *next)) next = t;
  };
  if (state == ClassicState::kPreparingRebalance) consider(join_deadline);
  consider(sync_deadline);
  for (const auto& [id, t] : pending_members) consider(t);
  for (const auto& [id, m] : members) consider(m.heartbeat_deadline);
  return next;
}

// Fires every deadline at or before `now`, earliest first (ties: the join phase, then the sync
// phase, then pending members, then members, each in id order), each at its own time, so that a
// late Tick changes nothing: what a deadline schedules counts from when it was due.
void ClassicGroup::Impl::Advance(TimePoint now) {
  while (state != ClassicState::kDead) {
    const std::optional<TimePoint> next = Next();
    if (!next || *next > now) return;
    const TimePoint at = *next;
    if (state == ClassicState::kPreparingRebalance && join_deadline == next) {
      FireJoinDeadline(at);
      continue;
    }
    if (sync_deadline == next) {
      FireSyncDeadline(at);
      continue;
    }
    auto p = std::find_if(pending_members.begin(), pending_members.end(),
                          [&](const auto& kv) { return kv.second == at; });
    if (p != pending_members.end()) {
      FirePending(std::string(p->first), at);
      continue;
    }
    for (const auto& [id, m] : members) {
      if (m.heartbeat_deadline == next) {
        FireHeartbeat(std::string(id), at);
        break;
      }
    }
  }
}

}  // namespace rdmq::group
