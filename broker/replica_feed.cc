#include "replica_feed.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "rdmq/client/backoff.h"
#include "rdmq/client/connection.h"
#include "rdmq/cluster/leader_epochs.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"
#include "rdmq/protocol/replica_messages.h"
#include "replica_handlers.h"

namespace rdmq::broker::internal {

using protocol::Api;
using protocol::WireError;

namespace {

constexpr uint64_t kAckBytes = 64;     // the ack block the lease asks for (never written here)
constexpr uint64_t kStagingAt = 4096;  // where the staged batches start in the local region
constexpr size_t kReceives = 16;       // receives kept posted for whatever the follower sends
constexpr auto kWriteTimeout = std::chrono::seconds(10);

template <class Int>
std::string Num(Int v) {
  return std::to_string(v);
}

// The follower's write window: the region a lease describes, attached on the connection.
class Window {
 public:
  Status Attach(client::Connection& conn, const protocol::LeaseResponse& lease) {
    region_.reset();
    RDMQ_ASSIGN_OR_RETURN(
        const fabric::RegionDescriptor d,
        fabric::RegionDescriptor::Decode(std::as_bytes(std::span(lease.segment.region.bytes))));
    RDMQ_ASSIGN_OR_RETURN(region_, conn.data()->Attach(d));
    lease_ = lease;
    return Status::Ok();
  }
  void Moved(Position committed, Position credit_end) {
    lease_.write_position = committed;
    lease_.credit_end = credit_end;
  }
  const protocol::LeaseResponse& lease() const { return lease_; }
  uint64_t room() const {
    return lease_.credit_end > lease_.write_position ? lease_.credit_end - lease_.write_position : 0;
  }
  // WRITEs `length` bytes of `local` (from `at`) at the window's write position; waits for it.
  Status Write(client::Connection& conn, fabric::Region& local, uint64_t at, uint64_t length) {
    fabric::WorkRequest wr;
    wr.opcode = fabric::Opcode::kWrite;
    wr.tag = 1;
    wr.local = {local.data() + at, length, &local};
    wr.remote = region_.get();
    wr.remote_offset = lease_.segment.RemoteOffset(lease_.write_position);
    RDMQ_RETURN_IF_ERROR(conn.data()->Post({&wr, 1}));
    fabric::Completion wc;
    const auto end = std::chrono::steady_clock::now() + kWriteTimeout;
    while (conn.send_cq()->Poll({&wc, 1}) == 0) {
      if (std::chrono::steady_clock::now() > end) return Status(Errc::kTimeout, "the WRITE to the follower");
      std::this_thread::yield();
    }
    return wc.status ? Status(wc.status, "the WRITE to the follower") : Status::Ok();
  }
  void Detach() { region_.reset(); }

 private:
  std::unique_ptr<fabric::RemoteRegion> region_;
  protocol::LeaseResponse lease_;
};

// The leader's view at one moment, taken under the partition's lock.
struct Snapshot {
  bool leading = false;
  Offset log_start{0};
  Offset log_end{0};
  cluster::LeaderEpochs epochs;
};

}  // namespace

ReplicaFeed::ReplicaFeed(std::shared_ptr<Partition> p, int32_t epoch, int32_t follower,
                         const ReplicationContext& ctx, PartitionReplication& owner)
    : p_(std::move(p)), epoch_(epoch), follower_(follower), ctx_(ctx), owner_(owner) {
  thread_ = std::thread([this] { Run(); });
}

ReplicaFeed::~ReplicaFeed() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

void ReplicaFeed::Stop() {
  MutexLock lock(wake_->mu);
  wake_->stop = true;
  wake_->cv.NotifyAll();
}

bool ReplicaFeed::Stopping() {
  MutexLock lock(wake_->mu);
  return wake_->stop;
}

void ReplicaFeed::Run() {
  client::Backoff backoff(std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
  while (!Stopping()) {
    const Status s = Serve();
    if (Stopping()) break;
    RDMQ_LOG(kWarn, "broker", "replicating to a follower stopped; connecting again")
        .kv("partition", p_->where())
        .kv("follower", follower_)
        .kv("leader_epoch", epoch_)
        .kv("error", s);
    const auto until = std::chrono::steady_clock::now() + backoff.Next();
    while (!Stopping() && std::chrono::steady_clock::now() < until) {
      owner_.CheckIsr();  // a follower that cannot be reached still leaves the ISR in time
      UniqueLock lock(wake_->mu);
      if (!wake_->stop) wake_->cv.WaitFor(lock, std::chrono::milliseconds(100));
    }
  }
}

Status ReplicaFeed::Serve() {
  const std::string address = ctx_.address_of(follower_);
  if (address.empty()) return Status(Errc::kUnavailable, "broker " + Num(follower_) + " is not live");
  client::ClientOptions co = ctx_.client;
  co.bootstrap = address;
  co.client_name = "rdmq-broker-" + Num(ctx_.self) + "-replica-feed";
  co.request_timeout = std::chrono::milliseconds(5000);
  RDMQ_ASSIGN_OR_RETURN(std::unique_ptr<client::Connection> conn, client::Connection::Open(co));
  RDMQ_ASSIGN_OR_RETURN(
      std::unique_ptr<fabric::Region> mem,
      conn->fabric().Allocate(kStagingAt + ctx_.fetch_max_bytes, fabric::kLocalWrite | fabric::kRemoteWrite));
  RDMQ_ASSIGN_OR_RETURN(std::unique_ptr<fabric::Grant> ack,
                        conn->data()->GrantAccess(*mem, 0, kAckBytes, fabric::kRemoteWrite));
  std::vector<fabric::RecvRequest> receives(kReceives);
  RDMQ_RETURN_IF_ERROR(conn->data()->PostRecv(receives));
  Window window;
  // The window refers to the endpoint: detached before the connection goes.
  struct Detach {
    Window& w;
    ~Detach() { w.Detach(); }
  } detach{window};

  // The partition as this broker leads it now; not leading any more ends the feed.
  auto snapshot = [&] {
    Snapshot s;
    MutexLock lock(p_->mu);
    s.leading = !p_->deleted() && p_->serving() && p_->leader_epoch() == epoch_;
    if (!s.leading) return s;
    s.log_start = p_->log().LogStartOffset();
    s.log_end = p_->active().log_end;
    s.epochs = EpochsOf(p_->log());
    return s;
  };
  auto not_leading = [&] {
    return Status(Errc::kFailedPrecondition,
                  "this broker no longer leads " + p_->where() + " at epoch " + Num(epoch_));
  };
  // Tells the replica set what the follower holds; the high watermark may grow.
  auto acked = [&](Offset end) -> Status {
    MutexLock lock(p_->mu);
    cluster::ReplicaSet* set = p_->replica_set();
    if (set == nullptr || p_->deleted()) return not_leading();
    RDMQ_RETURN_IF_ERROR(set->OnFollowerAck(follower_, end, MonoNanos()));
    ctx_.publisher->Publish(*p_);
    return Status::Ok();
  };

  protocol::OpenReplicaRequest open;
  open.topic = p_->topic_name();
  open.partition = p_->index();
  open.leader_id = ctx_.self;
  open.leader_epoch = epoch_;
  open.ack_region.bytes = ack->descriptor().Encode();
  RDMQ_ASSIGN_OR_RETURN(protocol::OpenReplicaResponse opened,
                        conn->Call<protocol::OpenReplicaResponse>(Api::kOpenReplica, open));
  RDMQ_RETURN_IF_ERROR(window.Attach(*conn, opened.lease));

  // Where the two logs agree: the follower is cut back to it.
  Snapshot now = snapshot();
  if (!now.leading) return not_leading();
  cluster::LeaderEpochs theirs;
  for (const protocol::EpochEntry& e : opened.epochs) (void)theirs.Observe(e.epoch, e.start);
  Offset end = opened.lease.next_offset;
  int rounds = 0;
  const Offset agreed =
      cluster::FollowerTruncationPoint(theirs, end, opened.log_start, now.epochs, now.log_end, &rounds);
  if (agreed < end) {
    protocol::ReplicaTruncateRequest cut;
    cut.lease_id = window.lease().lease_id;
    cut.leader_epoch = epoch_;
    cut.end = agreed;
    RDMQ_ASSIGN_OR_RETURN(protocol::LeaseResponse moved,
                          conn->Call<protocol::LeaseResponse>(Api::kReplicaTruncate, cut));
    RDMQ_RETURN_IF_ERROR(window.Attach(*conn, moved));
    RDMQ_LOG(kInfo, "broker", "follower cut back to where its log agrees with the leader's")
        .kv("partition", p_->where())
        .kv("follower", follower_)
        .kv("from", end)
        .kv("to", agreed)
        .kv("rounds", rounds);
    end = moved.next_offset;
  }
  if (end < now.log_start) {
    // Retention deleted what the follower lacks: it starts over, empty, at this log's start
    // (a truncation beyond its end), and the feed opens its replica again from there.
    RDMQ_LOG(kInfo, "broker", "follower ends below this log's start; it starts over there")
        .kv("partition", p_->where())
        .kv("follower", follower_)
        .kv("follower_end", end)
        .kv("log_start", now.log_start);
    protocol::ReplicaTruncateRequest restart;
    restart.lease_id = window.lease().lease_id;
    restart.leader_epoch = epoch_;
    restart.end = now.log_start;
    auto r = conn->Call<protocol::LeaseResponse>(Api::kReplicaTruncate, restart);
    if (!r.ok() && !r.status().is(WireError::kLeaseExpired)) return r.status();
    return Status(Errc::kUnavailable, "follower " + Num(follower_) + " of " + p_->where() +
                                          " started over at offset " + Num(now.log_start.value()) +
                                          "; opening its replica again");
  }
  RDMQ_RETURN_IF_ERROR(acked(end));
  RDMQ_LOG(kInfo, "broker", "replicating to a follower")
      .kv("partition", p_->where())
      .kv("follower", follower_)
      .kv("leader_epoch", epoch_)
      .kv("from", end);

  Offset told = opened.high_watermark;  // the high watermark the follower last heard
  const uint32_t lease_ms = std::max<uint32_t>(
      150, std::min(opened.lease.lease_ms,
                    opened.lease.idle_ms == 0 ? opened.lease.lease_ms : opened.lease.idle_ms));
  // Often enough to keep the lease and, idle, the follower's place in the ISR.
  const uint64_t heartbeat_ns = std::min(uint64_t{lease_ms} * 1'000'000, ctx_.lag_time_max_ns) / 3;
  uint64_t last_call_ns = MonoNanos();
  std::vector<fabric::Completion> received(kReceives);
  while (!Stopping()) {
    owner_.CheckIsr();
    // Whatever the follower's broker sent (nothing is expected): receives stay posted.
    const size_t got = conn->recv_cq()->Poll(received);
    if (got > 0) RDMQ_RETURN_IF_ERROR(conn->data()->PostRecv(std::span(receives).first(got)));
    if (!conn->connected()) return Status(Errc::kUnavailable, "the follower's broker went away");

    // What the follower lacks, staged; or a wait for the next commit.
    uint64_t length = 0;
    Offset next = end;
    uint64_t waiter = 0;
    Offset hw{0};
    {
      MutexLock lock(p_->mu);
      if (p_->deleted() || !p_->serving() || p_->leader_epoch() != epoch_) return not_leading();
      hw = p_->active().high_watermark;
      if (end < p_->active().log_end) {
        const size_t max =
            static_cast<size_t>(std::max<uint64_t>(1, std::min(ctx_.fetch_max_bytes, window.room())));
        auto read = p_->log().Read(end, max, storage::ReadScope::kCommitted);
        if (!read.ok()) return read.status();
        length = read->bytes.size();
        if (length > ctx_.fetch_max_bytes) {
          return Status(Errc::kInvalidArgument, p_->where() + ": the batch at offset " + Num(end.value()) +
                                                    " (" + Num(length) +
                                                    " bytes) is larger than replica.fetch.max.bytes");
        }
        // Committed bytes of an exclusive log never change: copied under the lock, they are
        // the log's as it stands.
        std::memcpy(mem->data() + kStagingAt, read->bytes.data(), length);
        next = read->next_offset;
      } else if (hw <= told) {
        auto wake = wake_;
        waiter = p_->AddCommitWaiter([wake] {
          MutexLock w(wake->mu);
          wake->woken = true;
          wake->cv.NotifyAll();
        });
      }
    }
    if (length == 0 && hw <= told) {
      const uint64_t now_ns = MonoNanos();
      if (now_ns - last_call_ns < heartbeat_ns) {
        {
          UniqueLock w(wake_->mu);
          if (!wake_->stop && !wake_->woken) {
            wake_->cv.WaitFor(w, std::chrono::nanoseconds(std::min<uint64_t>(
                                     heartbeat_ns - (now_ns - last_call_ns), 100'000'000)));
          }
          wake_->woken = false;
        }
        MutexLock lock(p_->mu);
        if (!p_->deleted()) p_->RemoveCommitWaiter(waiter);
        continue;
      }
      MutexLock lock(p_->mu);
      if (!p_->deleted()) p_->RemoveCommitWaiter(waiter);
    }
    if (length > window.room()) {
      // The first batch does not fit what is left of the follower's segment: it starts a new one.
      if (window.lease().write_position.value() == 0) {
        return Status(Errc::kInvalidArgument, p_->where() + ": a batch of " + Num(length) +
                                                  " bytes does not fit follower " + Num(follower_) +
                                                  "'s empty segment");
      }
      protocol::LeaseRequest roll;
      roll.lease_id = window.lease().lease_id;
      roll.flags = protocol::kRenewRoll;
      RDMQ_ASSIGN_OR_RETURN(protocol::LeaseResponse moved,
                            conn->Call<protocol::LeaseResponse>(Api::kRenewLease, roll));
      RDMQ_RETURN_IF_ERROR(window.Attach(*conn, moved));
      continue;
    }
    if (length > 0) RDMQ_RETURN_IF_ERROR(window.Write(*conn, *mem, kStagingAt, length));
    protocol::ReplicaCommitRequest commit;
    commit.lease_id = window.lease().lease_id;
    commit.leader_epoch = epoch_;
    commit.segment_base = window.lease().segment.base_offset;
    commit.position = window.lease().write_position;
    commit.length = static_cast<uint32_t>(length);
    commit.next_offset = length > 0 ? next : kNoOffset;
    commit.high_watermark = hw;
    RDMQ_ASSIGN_OR_RETURN(protocol::CommitResponse r,
                          conn->Call<protocol::CommitResponse>(Api::kReplicaCommit, commit));
    last_call_ns = MonoNanos();
    window.Moved(r.committed_position, r.credit_end);
    told = hw;
    if (length > 0) end = next;
    // Every answer is an ack: a follower that holds the log end stays caught up while nothing
    // is written.
    RDMQ_RETURN_IF_ERROR(acked(end));
  }
  return Status::Ok();
}

}  // namespace rdmq::broker::internal
