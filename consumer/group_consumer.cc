#include "consumer/group_consumer.h"

#include <algorithm>
#include <mutex>
#include <set>

#include "consumer/membership.h"
#include "rdmq/client/coordinator.h"
#include "rdmq/common/log.h"
#include "rdmq/protocol/group_messages.h"

namespace rdmq::consumer {

// The group calls of a consumer without group.id.
namespace {
Status NoGroup() {
  return Status(Errc::kFailedPrecondition, "this consumer has no group.id: set it to use groups");
}
}  // namespace
Status Consumer::Subscribe(const std::vector<std::string>&, RebalanceListener*) { return NoGroup(); }
Status Consumer::SubscribePattern(const std::string&, RebalanceListener*) { return NoGroup(); }
Status Consumer::Unsubscribe() { return NoGroup(); }
Status Consumer::CommitSync() { return NoGroup(); }
Status Consumer::CommitSync(const OffsetMap&) { return NoGroup(); }
// The callback is taken by value because the group consumer's override keeps it.
// NOLINTNEXTLINE(performance-unnecessary-value-param)
Status Consumer::CommitAsync(CommitCallback) { return NoGroup(); }
Result<OffsetMap> Consumer::Committed(const std::vector<TopicPartition>&) { return NoGroup(); }
Status Consumer::Pause(const std::vector<TopicPartition>&) { return NoGroup(); }
Status Consumer::Resume(const std::vector<TopicPartition>&) { return NoGroup(); }
std::vector<TopicPartition> Consumer::Paused() const { return {}; }
std::string Consumer::MemberId() const { return {}; }

namespace internal {
namespace {

using protocol::Api;
using protocol::WireError;
using Clock = std::chrono::steady_clock;
using TpSet = std::set<TopicPartition>;

// Results of CommitAsync, handed from the RPC thread to the application's next call. Shared with
// the callbacks, so it outlives a consumer closed while commits are in flight.
struct AsyncCommits {
  std::mutex mu;
  std::vector<std::tuple<Status, OffsetMap, CommitCallback>> done;
  int pending = 0;
};

class GroupConsumer final : public Consumer {
 public:
  GroupConsumer(ConsumerConfig cfg, std::unique_ptr<Consumer> reader,
                std::unique_ptr<client::Connection> conn)
      : cfg_(std::move(cfg)), reader_(std::move(reader)), conn_(std::move(conn)), member_(cfg_, *conn_) {}
  ~GroupConsumer() override { Close(); }

  Status Assign(const std::vector<TopicPartition>& partitions) override {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    if (subscribed_)
      return Status(Errc::kFailedPrecondition, "Assign on a subscribed consumer: Unsubscribe first");
    assigned_ = TpSet(partitions.begin(), partitions.end());
    std::erase_if(paused_, [&](const auto& e) { return assigned_.count(e.first) == 0; });
    return ApplyToReader();
  }
  std::vector<TopicPartition> Assignment() const override { return {assigned_.begin(), assigned_.end()}; }

  Result<std::vector<ConsumerRecord>> Poll(std::chrono::milliseconds timeout) override {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      DeliverAsyncCommits();
      RDMQ_RETURN_IF_ERROR(member_.TakeError());
      // While the broker is away the assignment waits; the reader reconnects in its Poll.
      if (Status s = Reconcile(); !s.ok() && !s.is(Errc::kUnavailable) && !s.is(Errc::kTimeout)) return s;
      RDMQ_RETURN_IF_ERROR(MaybeAutoCommit());
      // In a group, wait in slices so that assignment changes are applied while idle.
      const auto now = Clock::now();
      const auto slice = subscribed_
                             ? std::min(deadline - now, Clock::duration(std::chrono::milliseconds(100)))
                             : deadline - now;
      RDMQ_ASSIGN_OR_RETURN(auto records, reader_->Poll(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::max(slice, Clock::duration::zero()))));
      if (!records.empty() || Clock::now() >= deadline || woken_.exchange(false)) return records;
    }
  }

  Status Seek(const TopicPartition& tp, int64_t offset) override {
    if (auto it = paused_.find(tp); it != paused_.end()) {
      if (offset < 0)
        return Status(Errc::kInvalidArgument, "Seek to a negative offset " + std::to_string(offset));
      it->second = offset;
      return Status::Ok();
    }
    return reader_->Seek(tp, offset);
  }
  Status SeekToBeginning(const std::vector<TopicPartition>& partitions) override {
    return reader_->SeekToBeginning(Active(partitions));
  }
  Status SeekToEnd(const std::vector<TopicPartition>& partitions) override {
    return reader_->SeekToEnd(Active(partitions));
  }
  Result<int64_t> Position(const TopicPartition& tp) override {
    if (auto it = paused_.find(tp); it != paused_.end()) return it->second;
    return reader_->Position(tp);
  }
  Result<int64_t> OffsetForTime(const TopicPartition& tp, int64_t timestamp_ms) override {
    return reader_->OffsetForTime(tp, timestamp_ms);
  }
  void Wakeup() override {
    woken_.store(true);
    reader_->Wakeup();
  }

  void Close() override {
    if (closed_) return;
    if (subscribed_) (void)LeaveGroup();
    WaitAsyncCommits(cfg_.client.request_timeout);
    DeliverAsyncCommits();
    member_.Stop();
    closed_ = true;
    reader_->Close();
  }

  Status Subscribe(const std::vector<std::string>& topics, RebalanceListener* listener) override {
    if (topics.empty()) return Status(Errc::kInvalidArgument, "Subscribe to no topics: use Unsubscribe");
    return Join(topics, "", listener);
  }
  Status SubscribePattern(const std::string& regex, RebalanceListener* listener) override {
    if (regex.empty()) return Status(Errc::kInvalidArgument, "SubscribePattern with an empty regex");
    return Join({}, regex, listener);
  }
  Status Unsubscribe() override {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    if (!subscribed_) return Status::Ok();
    return LeaveGroup();
  }

  Status CommitSync() override {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    DeliverAsyncCommits();
    RDMQ_ASSIGN_OR_RETURN(OffsetMap offsets, Positions(assigned_));
    return CommitSync(offsets);
  }
  Status CommitSync(const OffsetMap& offsets) override {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    if (offsets.empty()) return Status::Ok();
    Status s;
    // A heartbeat may move the member's epoch between reading it and the commit's arrival; a
    // stale epoch is retried once the next heartbeat answered.
    // The coordinator moved: a subscribed member's heartbeat thread finds it (and the member
    // rejoins there); without a subscription nothing else uses the connection, so this thread
    // follows it.
    for (int attempt = 0; attempt < 3; ++attempt) {
      s = conn_->Call<protocol::Empty>(Api::kOffsetCommit, CommitRequest(offsets)).status();
      if (s.is(WireError::kStaleMemberEpoch) || (subscribed_ && s.is(WireError::kNotCoordinator))) {
        member_.AwaitHeartbeat(std::chrono::milliseconds(1000));
      } else if (!subscribed_ && (s.is(WireError::kNotCoordinator) || s.is(Errc::kUnavailable))) {
        RDMQ_RETURN_IF_ERROR(client::FollowCoordinator(*conn_, cfg_.group_id));
      } else {
        break;
      }
    }
    return s;
  }
  Status CommitAsync(CommitCallback done) override {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    RDMQ_ASSIGN_OR_RETURN(OffsetMap offsets, Positions(assigned_));
    if (offsets.empty()) {
      if (done) done(Status::Ok(), offsets);
      return Status::Ok();
    }
    auto shared = async_;
    {
      std::lock_guard lock(shared->mu);
      ++shared->pending;
    }
    return conn_->CallAsync(
        Api::kOffsetCommit, protocol::Encode(CommitRequest(offsets)),
        [shared, offsets, done = std::move(done)](Result<std::string> r) {
          Status s = r.status();
          if (r.ok())
            s = protocol::DecodeResponse<protocol::Empty>(std::as_bytes(std::span(r->data(), r->size())))
                    .status();
          std::lock_guard lock(shared->mu);
          --shared->pending;
          shared->done.emplace_back(s, offsets, done);
        });
  }
  Result<OffsetMap> Committed(const std::vector<TopicPartition>& partitions) override {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    protocol::OffsetFetchRequest req{cfg_.group_id, {}};
    for (const auto& tp : partitions) req.partitions.push_back({tp.topic, PartitionId(tp.partition)});
    if (req.partitions.empty()) return OffsetMap{};
    RDMQ_ASSIGN_OR_RETURN(auto r, (conn_->Call<protocol::OffsetFetchResponse>(Api::kOffsetFetch, req)));
    OffsetMap out;
    for (const auto& e : r.offsets)
      out[{e.topic, e.partition.value()}] = {e.offset.value(), e.metadata, e.leader_epoch};
    return out;
  }
  Status Pause(const std::vector<TopicPartition>& partitions) override {
    for (const auto& tp : partitions) {
      if (assigned_.count(tp) == 0) return Status(Errc::kInvalidArgument, "Pause of unassigned " + Name(tp));
    }
    for (const auto& tp : partitions) {
      if (paused_.count(tp) != 0) continue;
      RDMQ_ASSIGN_OR_RETURN(paused_[tp], reader_->Position(tp));
    }
    return ApplyToReader();
  }
  Status Resume(const std::vector<TopicPartition>& partitions) override {
    std::vector<std::pair<TopicPartition, int64_t>> resumed;
    for (const auto& tp : partitions) {
      if (auto it = paused_.find(tp); it != paused_.end()) {
        resumed.emplace_back(tp, it->second);
        paused_.erase(it);
      }
    }
    RDMQ_RETURN_IF_ERROR(ApplyToReader());
    for (const auto& [tp, pos] : resumed) RDMQ_RETURN_IF_ERROR(reader_->Seek(tp, pos));
    return Status::Ok();
  }
  std::vector<TopicPartition> Paused() const override {
    std::vector<TopicPartition> out;
    for (const auto& [tp, pos] : paused_) out.push_back(tp);
    return out;
  }
  std::string MemberId() const override { return member_.Identity().first; }

 private:
  static std::string Name(const TopicPartition& tp) { return tp.topic + "/" + std::to_string(tp.partition); }

  Status CheckOpen() const {
    return closed_ ? Status(Errc::kFailedPrecondition, "the consumer is closed") : Status::Ok();
  }

  std::vector<TopicPartition> Active(const std::vector<TopicPartition>& partitions) const {
    std::vector<TopicPartition> out;
    for (const auto& tp : partitions.empty() ? Assignment() : partitions) {
      if (paused_.count(tp) == 0) out.push_back(tp);
    }
    return out;
  }

  // The reader reads the assigned partitions that are not paused.
  Status ApplyToReader() {
    std::vector<TopicPartition> active;
    for (const auto& tp : assigned_) {
      if (paused_.count(tp) == 0) active.push_back(tp);
    }
    return reader_->Assign(active);
  }

  Status Join(std::vector<std::string> topics, std::string regex, RebalanceListener* listener) {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    if (!subscribed_ && !assigned_.empty()) {
      return Status(Errc::kFailedPrecondition,
                    "Subscribe on a consumer with a manual assignment: Assign({}) first");
    }
    listener_ = listener;
    subscribed_ = true;
    member_.Subscribe(std::move(topics), std::move(regex));
    return Status::Ok();
  }

  Status LeaveGroup() {
    Status s;
    if (!assigned_.empty()) {
      if (listener_ != nullptr) listener_->OnRevoked(Assignment());
      if (cfg_.enable_auto_commit) s = CommitSync();
    }
    member_.Leave(cfg_.client.request_timeout);
    subscribed_ = false;
    assigned_.clear();
    paused_.clear();
    (void)ApplyToReader();
    return s;
  }

  protocol::OffsetCommitRequest CommitRequest(const OffsetMap& offsets) const {
    protocol::OffsetCommitRequest req;
    req.group = cfg_.group_id;
    if (subscribed_) std::tie(req.member_id, req.member_epoch) = member_.Identity();
    for (const auto& [tp, o] : offsets) {
      req.offsets.push_back({tp.topic, PartitionId(tp.partition), Offset(o.offset), o.leader_epoch,
                             o.metadata, TimestampMs(0)});
    }
    return req;
  }

  Result<OffsetMap> Positions(const TpSet& partitions) {
    OffsetMap out;
    for (const auto& tp : partitions) {
      RDMQ_ASSIGN_OR_RETURN(int64_t pos, Position(tp));
      out[tp] = {pos, "", -1};
    }
    return out;
  }

  // Applies the broker's latest assignment: revoke what went, add what came.
  Status Reconcile() {
    if (!subscribed_) return Status::Ok();
    if (member_.TakeLost() && !assigned_.empty()) {
      const std::vector<TopicPartition> lost = Assignment();
      if (listener_ != nullptr) listener_->OnLost(lost);
      assigned_.clear();
      paused_.clear();
      RDMQ_RETURN_IF_ERROR(ApplyToReader());
    }
    const auto target = member_.Target();
    if (!target) return Status::Ok();
    const TpSet want(target->begin(), target->end());
    std::vector<TopicPartition> revoked, added;
    std::set_difference(assigned_.begin(), assigned_.end(), want.begin(), want.end(),
                        std::back_inserter(revoked));
    std::set_difference(want.begin(), want.end(), assigned_.begin(), assigned_.end(),
                        std::back_inserter(added));
    if (!revoked.empty()) {
      if (listener_ != nullptr) listener_->OnRevoked(revoked);
      if (cfg_.enable_auto_commit) {
        auto offsets = Positions(TpSet(revoked.begin(), revoked.end()));
        Status s = offsets.ok() ? CommitSync(*offsets) : offsets.status();
        if (!s.ok()) RDMQ_LOG(kWarn, "consumer", "commit of revoked partitions failed").kv("error", s);
      }
      for (const auto& tp : revoked) {
        assigned_.erase(tp);
        paused_.erase(tp);
      }
      RDMQ_RETURN_IF_ERROR(ApplyToReader());
    }
    if (!added.empty()) {
      RDMQ_ASSIGN_OR_RETURN(OffsetMap committed, Committed(added));
      assigned_.insert(added.begin(), added.end());
      RDMQ_RETURN_IF_ERROR(ApplyToReader());
      for (const auto& tp : added) {
        const auto it = committed.find(tp);
        if (it != committed.end() && it->second.offset >= 0) {
          RDMQ_RETURN_IF_ERROR(reader_->Seek(tp, it->second.offset));
        } else if (cfg_.auto_offset_reset == OffsetReset::kNone) {
          member_.SetOwned(Assignment());
          return Status(Errc::kOutOfRange, "group " + cfg_.group_id + " has no committed offset for " +
                                               Name(tp) + " and auto.offset.reset=none");
        }
      }
      if (listener_ != nullptr) listener_->OnAssigned(added);
    }
    member_.SetOwned(Assignment());
    return Status::Ok();
  }

  Status MaybeAutoCommit() {
    if (!subscribed_ || !cfg_.enable_auto_commit) return Status::Ok();
    const auto now = Clock::now();
    if (now < next_auto_commit_) return Status::Ok();
    next_auto_commit_ = now + cfg_.auto_commit_interval;
    Status s = CommitSync();
    if (!s.ok()) RDMQ_LOG(kWarn, "consumer", "auto commit failed").kv("group", cfg_.group_id).kv("error", s);
    return Status::Ok();
  }

  void DeliverAsyncCommits() {
    std::vector<std::tuple<Status, OffsetMap, CommitCallback>> done;
    {
      std::lock_guard lock(async_->mu);
      done.swap(async_->done);
    }
    for (auto& [s, offsets, cb] : done) {
      if (cb) cb(s, offsets);
    }
  }

  void WaitAsyncCommits(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      {
        std::lock_guard lock(async_->mu);
        if (async_->pending == 0) return;
      }
      if (Clock::now() >= deadline) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  const ConsumerConfig cfg_;
  std::unique_ptr<Consumer> reader_;
  std::unique_ptr<client::Connection> conn_;
  Membership member_;
  RebalanceListener* listener_ = nullptr;
  bool subscribed_ = false;
  bool closed_ = false;
  std::atomic<bool> woken_{false};
  TpSet assigned_;
  std::map<TopicPartition, int64_t> paused_;  // with the position to resume from
  Clock::time_point next_auto_commit_ = Clock::now() + cfg_.auto_commit_interval;
  std::shared_ptr<AsyncCommits> async_ = std::make_shared<AsyncCommits>();
};

}  // namespace

Result<std::unique_ptr<Consumer>> MakeGroupConsumer(const ConsumerConfig& cfg,
                                                    std::unique_ptr<Consumer> reader) {
  if (cfg.group_id.size() > 255 ||
      std::any_of(cfg.group_id.begin(), cfg.group_id.end(), [](char c) { return c < 0x21 || c > 0x7e; })) {
    return Status(Errc::kInvalidArgument,
                  "group.id=" + cfg.group_id + ": must be 1 to 255 printable ASCII bytes without spaces");
  }
  client::ConnectionOptions co;
  co.data_endpoint = false;
  RDMQ_ASSIGN_OR_RETURN(auto conn, client::Connection::Open(cfg.client, co));
  // A coordinator that cannot be reached yet (brokers disagree for a moment while one joins or
  // leaves) is looked for again by the first heartbeat or commit; the group's own errors (a bad
  // id, an ACL refusal) are the caller's.
  if (Status s = client::FollowCoordinator(*conn, cfg.group_id);
      !s.ok() && !s.is(Errc::kUnavailable) && !s.is(protocol::WireError::kNotCoordinator)) {
    return s;
  }
  return std::unique_ptr<Consumer>(new GroupConsumer(cfg, std::move(reader), std::move(conn)));
}

}  // namespace internal
}  // namespace rdmq::consumer
