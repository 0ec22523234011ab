// ClusterAgent on a ZooKeeper session: registration, the controller's election and its
// reconciliation, the view of the cluster kept fresh by watches (and a periodic read as a
// backstop), and topic administration.
#include "rdmq/cluster/agent.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>
#include <set>
#include <thread>

#include "layout.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"
#include "rdmq/common/mutex.h"
#include "rdmq/coord/zk.h"

namespace rdmq::cluster {
namespace {

using coord::CoordErrc;
using coord::CreateMode;
using coord::MultiOp;
using coord::ZkSession;
using internal::Layout;

using Config = std::vector<std::pair<std::string, std::string>>;

int64_t NowMs() { return WallMillis().value(); }

// A counter znode (created "0" when missing) advanced by `count` with compare-and-set; returns
// its value before.
Result<int64_t> Advance(ZkSession& zk, const std::string& path, int64_t count) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto made = zk.Create(path, "0", CreateMode::kPersistent);
    if (!made.ok() && !made.status().is(CoordErrc::kNodeExists)) return made.status();
    RDMQ_ASSIGN_OR_RETURN(coord::Node n, zk.Get(path));
    int64_t last = 0;
    try {
      last = std::stoll(n.data.empty() ? "0" : n.data);
    } catch (...) {
      return Status(ClusterErrc::kBadZnode, path + ": not a number");
    }
    auto set = zk.Set(path, std::to_string(last + count), n.stat.version);
    if (set.ok()) return last;
    if (!set.status().is(CoordErrc::kBadVersion)) return set.status();
  }
  return Status(ClusterErrc::kStaleState, path + ": too many concurrent changes");
}

class Agent final : public ClusterAgent {
 public:
  Agent(AgentOptions o, AgentListener* listener)
      : opts_(std::move(o)), layout_{opts_.root}, listener_(listener) {}

  ~Agent() override {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    wake_.NotifyAll();
    if (thread_.joinable()) thread_.join();
    MutexLock lock(zk_mu_);
    zk_.reset();  // the ephemeral znodes go now
  }
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  Status Init() {
    RDMQ_RETURN_IF_ERROR(OpenSession());
    thread_ = std::thread([this] { Loop(); });
    return Status::Ok();
  }

  Result<TopicAssignment> CreateTopic(const std::string& name, Config config, int32_t partitions,
                                      int32_t replication_factor) override {
    const auto zk = Zk();
    RDMQ_ASSIGN_OR_RETURN(std::vector<BrokerId> live, LiveBrokers(*zk));
    TopicAssignment t;
    t.name = name;
    t.created_ms = NowMs();
    t.config = std::move(config);
    RDMQ_ASSIGN_OR_RETURN(t.replicas, AssignReplicas(live, partitions, replication_factor,
                                                     static_cast<uint32_t>(std::hash<std::string>{}(name))));
    if (auto there = zk->Exists(layout_.topic(name)); there.ok() && there->has_value()) return Exists(name);
    RDMQ_ASSIGN_OR_RETURN(t.id, NextTopicId());
    // The topic with its partitions' folders, at once: the controller adds each one's state.
    std::vector<MultiOp> ops = {MultiOp::Create(layout_.topic(name), EncodeTopic(t)),
                                MultiOp::Create(layout_.partitions(name), "")};
    for (int32_t p = 0; p < partitions; ++p) ops.push_back(MultiOp::Create(layout_.partition(name, p), ""));
    if (Status s = zk->Multi(ops); !s.ok()) return s.is(CoordErrc::kNodeExists) ? Exists(name) : s;
    RDMQ_LOG(kInfo, "cluster", "topic created")
        .kv("topic", name)
        .kv("partitions", partitions)
        .kv("replication_factor", replication_factor);
    Refresh();
    return t;
  }

  Status WaitForLeaders(const std::string& name, std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string missing;
    while (true) {
      RDMQ_ASSIGN_OR_RETURN(ClusterSnapshot s, Snapshot());
      auto t = s.topics.find(name);
      if (t == s.topics.end()) return Status(Errc::kNotFound, "no topic '" + name + "'");
      missing.clear();
      for (int32_t p = 0; p < static_cast<int32_t>(t->second.replicas.size()); ++p) {
        auto st = s.states.find({name, p});
        if (st == s.states.end() || st->second.leader == kNoLeader) missing += " " + std::to_string(p);
      }
      if (missing.empty()) return Status::Ok();
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return Status(Errc::kTimeout, "topic '" + name + "': no leader yet for partitions" + missing);
  }

  Status DeleteTopic(const std::string& name) override {
    const auto zk = Zk();
    for (int attempt = 0; attempt < 20; ++attempt) {
      auto parts = zk->Children(layout_.partitions(name));
      if (!parts.ok()) {
        if (parts.status().is(CoordErrc::kNoNode)) {
          Status gone = zk->Delete(layout_.topic(name));
          if (gone.is(CoordErrc::kNoNode)) return Status(Errc::kNotFound, "no topic '" + name + "'");
          if (gone.is(CoordErrc::kNotEmpty)) continue;
          return gone;
        }
        return parts.status();
      }
      std::vector<MultiOp> ops;
      for (const auto& p : *parts) {
        const std::string dir = layout_.partitions(name) + "/" + p;
        auto kids = zk->Children(dir);
        if (!kids.ok()) continue;
        for (const auto& k : *kids) ops.push_back(MultiOp::Delete(coord::JoinPath(dir, k), -1));
        ops.push_back(MultiOp::Delete(dir, -1));
      }
      ops.push_back(MultiOp::Delete(layout_.partitions(name), -1));
      ops.push_back(MultiOp::Delete(layout_.topic(name), -1));
      Status s = zk->Multi(ops);
      if (s.ok()) {
        RDMQ_LOG(kInfo, "cluster", "topic deleted").kv("topic", name);
        Refresh();
        return s;
      }
      if (!s.is(CoordErrc::kNotEmpty) && !s.is(CoordErrc::kNoNode)) return s;
    }
    return Status(ClusterErrc::kStaleState, "topic '" + name + "' kept changing while it was deleted");
  }

  Result<TopicAssignment> AlterTopic(const std::string& name, Config config) override {
    return ChangeTopic(name, [&](TopicAssignment& t, std::vector<MultiOp>*) -> Status {
      t.config = std::move(config);
      return Status::Ok();
    });
  }

  Result<TopicAssignment> AddPartitions(const std::string& name, int32_t partitions) override {
    RDMQ_ASSIGN_OR_RETURN(std::vector<BrokerId> live, LiveBrokers(*Zk()));
    return ChangeTopic(name, [&](TopicAssignment& t, std::vector<MultiOp>* ops) -> Status {
      const auto now = static_cast<int32_t>(t.replicas.size());
      if (partitions <= now) {
        return Status(Errc::kInvalidArgument, "topic '" + name + "' has " + std::to_string(now) +
                                                  " partitions; the new count must be larger");
      }
      RDMQ_ASSIGN_OR_RETURN(auto more,
                            AssignReplicas(live, partitions, static_cast<int32_t>(t.replicas[0].size()),
                                           static_cast<uint32_t>(std::hash<std::string>{}(name))));
      for (int32_t p = now; p < partitions; ++p) {
        t.replicas.push_back(more[static_cast<size_t>(p)]);
        ops->push_back(MultiOp::Create(layout_.partition(name, p), ""));
      }
      return Status::Ok();
    });
  }

  Result<TopicAssignment> ReassignPartition(const std::string& name, int32_t partition,
                                            std::vector<BrokerId> target) override {
    RDMQ_ASSIGN_OR_RETURN(std::vector<BrokerId> live, LiveBrokers(*Zk()));
    const std::string where = name + "-" + std::to_string(partition);
    return ChangeTopic(name, [&](TopicAssignment& t, std::vector<MultiOp>*) -> Status {
      if (partition < 0 || partition >= static_cast<int32_t>(t.replicas.size())) {
        return Status(Errc::kInvalidArgument,
                      "topic '" + name + "' has no partition " + std::to_string(partition));
      }
      auto moving = t.reassigning.find(partition);
      if (moving != t.reassigning.end()) {
        return Status(Errc::kFailedPrecondition,
                      where + " is being moved to brokers " + Brokers(moving->second) + " already");
      }
      std::vector<BrokerId>& now = t.replicas[static_cast<size_t>(partition)];
      if (target.size() != now.size()) {
        return Status(Errc::kInvalidArgument, where + " has " + std::to_string(now.size()) + " replicas; " +
                                                  std::to_string(target.size()) + " given");
      }
      std::set<BrokerId> seen;
      for (BrokerId b : target) {
        if (!seen.insert(b).second) {
          return Status(Errc::kInvalidArgument, "broker " + std::to_string(b) + " named twice");
        }
        if (std::find(live.begin(), live.end(), b) == live.end()) {
          return Status(Errc::kInvalidArgument, "broker " + std::to_string(b) + " is not registered (live)");
        }
      }
      if (std::set<BrokerId>(now.begin(), now.end()) == seen) {
        now = target;  // the same brokers: only the preference order changes
      } else {
        t.reassigning[partition] = target;
        now = ReplicasWhileMoving(now, target);
      }
      return Status::Ok();
    });
  }

  Result<ClusterSnapshot> Snapshot() override { return Read(*Zk(), false); }
  ClusterSnapshot Cached() const override {
    MutexLock lock(cache_mu_);
    return cached_;
  }

  Result<PartitionState> ChangeIsr(const TopicPartition& tp, const PartitionState& from,
                                   std::vector<BrokerId> isr) override {
    if (from.leader != opts_.self.id) {
      return Status(ClusterErrc::kNotLeader, tp.topic + "-" + std::to_string(tp.partition) +
                                                 " is led by broker " + std::to_string(from.leader));
    }
    PartitionState next = from;
    next.isr = std::move(isr);
    if (!next.InIsr(next.leader)) return Status(Errc::kInvalidArgument, "the leader must stay in the ISR");
    auto set = Zk()->Set(layout_.state(tp.topic, tp.partition), EncodeState(next), from.version);
    if (!set.ok()) {
      if (set.status().is(CoordErrc::kBadVersion) || set.status().is(CoordErrc::kNoNode)) {
        return Status(ClusterErrc::kStaleState, tp.topic + "-" + std::to_string(tp.partition) +
                                                    ": the state changed meanwhile (a new leader or ISR)");
      }
      return set.status();
    }
    next.version = set->version;
    RDMQ_LOG(kInfo, "cluster", "ISR changed")
        .kv("partition", tp.topic + "-" + std::to_string(tp.partition))
        .kv("isr", Brokers(next.isr))
        .kv("leader_epoch", next.leader_epoch);
    Refresh();
    return next;
  }

  Result<uint64_t> NextTopicId() override {
    RDMQ_ASSIGN_OR_RETURN(int64_t last, Advance(*Zk(), layout_.topic_id(), 1));
    return static_cast<uint64_t>(last + 1);
  }
  Result<int64_t> ProducerIdBlock(int64_t count) override {
    return Advance(*Zk(), layout_.producer_id_block(), count);
  }

  std::shared_ptr<ZkSession> Session() const override { return Zk(); }
  const std::string& root() const override { return opts_.root; }
  BrokerId id() const override { return opts_.self.id; }
  bool is_controller() const override { return controller_.load(); }
  void Refresh() override {
    {
      MutexLock lock(mu_);
      dirty_ = true;
    }
    wake_.NotifyAll();
  }

 private:
  static std::string Brokers(const std::vector<BrokerId>& v) {
    std::string s;
    for (BrokerId b : v) s += (s.empty() ? "" : ",") + std::to_string(b);
    return s;
  }
  static Status Exists(const std::string& name) {
    return Status(Errc::kAlreadyExists, "topic '" + name + "' already exists");
  }

  // The ids of the registered brokers.
  Result<std::vector<BrokerId>> LiveBrokers(ZkSession& zk) const {
    RDMQ_ASSIGN_OR_RETURN(std::vector<std::string> ids, zk.Children(layout_.brokers()));
    std::vector<BrokerId> live;
    live.reserve(ids.size());
    for (const auto& id : ids) live.push_back(static_cast<BrokerId>(std::stol(id)));
    return live;
  }

  std::shared_ptr<ZkSession> Zk() const {
    MutexLock lock(zk_mu_);
    return zk_;
  }

  // A new session, and this broker registered through it (waiting for the znode of a previous
  // session of ours to go).
  Status OpenSession() {
    coord::SessionOptions so;
    so.connect = opts_.zookeeper;
    so.session_timeout = opts_.session_timeout;
    // Every change matters: expired (rejoin), disconnected (fence), connected again (unfence).
    so.on_state = [this](coord::SessionState) { Refresh(); };
    auto zk = ZkSession::Connect(so);
    if (!zk.ok()) return zk.status().WithContext("ZooKeeper at " + opts_.zookeeper);
    std::shared_ptr<ZkSession> session = std::move(*zk);
    RDMQ_RETURN_IF_ERROR(session->CreateParents(layout_.brokers()));
    RDMQ_RETURN_IF_ERROR(session->CreateParents(layout_.topics()));
    RDMQ_RETURN_IF_ERROR(session->CreateParents(layout_.users()));
    const auto deadline = std::chrono::steady_clock::now() + opts_.session_timeout * 2;
    while (true) {
      auto made =
          session->Create(layout_.broker(opts_.self.id), EncodeBroker(opts_.self), CreateMode::kEphemeral);
      if (made.ok()) break;
      if (!made.status().is(CoordErrc::kNodeExists)) return made.status();
      auto held = session->Get(layout_.broker(opts_.self.id));
      if (held.ok() && held->stat.ephemeral_owner == session->session_id()) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        return Status(Errc::kAlreadyExists, "broker.id " + std::to_string(opts_.self.id) +
                                                " is registered in ZooKeeper by a live broker (session " +
                                                std::to_string(held.ok() ? held->stat.ephemeral_owner : 0) +
                                                ")");
      }
      // Perhaps our own previous session, which ZooKeeper has not expired yet.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    RDMQ_LOG(kInfo, "cluster", "broker registered")
        .kv("broker", opts_.self.id)
        .kv("zookeeper", opts_.zookeeper)
        .kv("session", session->session_id());
    {
      MutexLock lock(zk_mu_);
      zk_ = std::move(session);
    }
    {
      MutexLock lock(mu_);
      watched_.clear();
    }
    controller_.store(false);
    return Status::Ok();
  }

  void Loop() {
    UniqueLock lock(mu_);
    while (!stop_) {
      if (!dirty_) (void)wake_.WaitFor(lock, opts_.refresh_interval);
      if (stop_) break;
      dirty_ = false;
      lock.Unlock();
      Step();
      lock.Lock();
    }
  }

  // One round: the session, the controller's seat, the view, the controller's work, the listener.
  void Step() {
    const coord::SessionState state = Zk()->state();
    if (state == coord::SessionState::kDisconnected) {
      // ZooKeeper cannot be reached. The client library reports this after two thirds of the
      // session timeout without hearing from the server, and the server expires the session (and
      // the controller elects other leaders) only after the whole timeout: a broker that stops
      // serving now is done before anyone else may lead what it led. It serves again once the
      // session is confirmed (connected: the next round reports the replicas anew) or renewed.
      if (!fenced_) {
        fenced_ = true;
        RDMQ_LOG(kWarn, "cluster", "ZooKeeper unreachable; serving nothing until it answers")
            .kv("broker", opts_.self.id);
        last_.reset();
        last_security_.reset();
        listener_->OnSessionLost();
      }
      return;
    }
    fenced_ = false;
    if (state == coord::SessionState::kExpired) {
      RDMQ_LOG(kWarn, "cluster", "ZooKeeper session lost; rejoining").kv("broker", opts_.self.id);
      controller_.store(false);
      last_.reset();
      last_security_.reset();
      listener_->OnSessionLost();
      if (Status s = OpenSession(); !s.ok()) {
        RDMQ_LOG(kWarn, "cluster", "rejoining failed; retrying").kv("error", s);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        Refresh();
        return;
      }
    }
    const auto zk = Zk();
    Campaign(*zk);
    auto view = Read(*zk, true);
    if (!view.ok()) {
      if (!view.status().is(Errc::kUnavailable)) {
        RDMQ_LOG(kWarn, "cluster", "reading the cluster's state failed").kv("error", view.status());
      }
      return;
    }
    if (controller_.load() && Control(*zk, *view)) {
      view = Read(*zk, true);  // what the controller wrote
      if (!view.ok()) return;
    }
    {
      MutexLock lock(cache_mu_);
      cached_ = *view;
    }
    ReplicaMap mine;
    for (const auto& [name, t] : view->topics) {
      for (int32_t p = 0; p < static_cast<int32_t>(t.replicas.size()); ++p) {
        const auto& replicas = t.replicas[static_cast<size_t>(p)];
        if (std::find(replicas.begin(), replicas.end(), opts_.self.id) == replicas.end()) continue;
        Replica r{t.id, t.created_ms, static_cast<int32_t>(t.replicas.size()), t.config, replicas, {}};
        if (auto st = view->states.find({name, p}); st != view->states.end()) r.state = st->second;
        mine.emplace(TopicPartition{name, p}, std::move(r));
      }
    }
    if (!last_ || *last_ != mine) {
      last_ = mine;
      listener_->OnReplicas(mine);
    }
    if (!last_security_ || *last_security_ != view->security) {
      last_security_ = view->security;
      listener_->OnSecurity(view->security);
    }
  }

  // Takes the controller's seat when it is free: the epoch goes up and the seat is taken in one
  // atomic step, so that exactly one campaign wins each epoch.
  void Campaign(ZkSession& zk) {
    auto seat = zk.Exists(layout_.controller(), Watch(layout_.controller()));
    if (!seat.ok()) return;
    if (seat->has_value()) {
      const bool mine = (*seat)->ephemeral_owner == zk.session_id();
      if (!mine && controller_.exchange(false)) {
        RDMQ_LOG(kWarn, "cluster", "no longer the controller").kv("broker", opts_.self.id);
      }
      return;
    }
    auto made = zk.Create(layout_.controller_epoch(), "0", CreateMode::kPersistent);
    if (!made.ok() && !made.status().is(CoordErrc::kNodeExists)) return;
    auto e = zk.Get(layout_.controller_epoch());
    if (!e.ok()) return;
    int32_t epoch = 0;
    try {
      epoch = std::stoi(e->data.empty() ? "0" : e->data) + 1;
    } catch (...) {
      RDMQ_LOG(kError, "cluster", "the controller epoch znode is not a number").kv("data", e->data);
      return;
    }
    const Status won =
        zk.Multi({MultiOp::Set(layout_.controller_epoch(), std::to_string(epoch), e->stat.version),
                  MultiOp::Create(layout_.controller(), EncodeController(opts_.self.id, epoch),
                                  CreateMode::kEphemeral)});
    if (!won.ok()) return;  // another broker won this round
    epoch_ = epoch;
    epoch_version_ = e->stat.version + 1;
    controller_.store(true);
    RDMQ_LOG(kInfo, "cluster", "became the controller").kv("broker", opts_.self.id).kv("epoch", epoch);
  }

  // The controller's round: Reconcile's changes written, each with the controller epoch checked
  // (a newer controller fences this one). True when something was written.
  bool Control(ZkSession& zk, const ClusterSnapshot& view) {
    ClusterView v{view.topics, view.states};
    std::set<BrokerId> live;
    for (const auto& [id, b] : view.brokers) live.insert(id);
    const auto changes = Reconcile(v, live, {epoch_, opts_.unclean_leader_election});
    bool wrote = false;
    auto write_of = [&](const StateChange& c) {
      const std::string path = layout_.state(c.tp.topic, c.tp.partition);
      return c.create ? MultiOp::Create(path, EncodeState(c.next))
                      : MultiOp::Set(path, EncodeState(c.next), c.expected_version);
    };
    auto fenced = [&](const Status& s, size_t failed) {
      if (failed != 0 || !s.is(CoordErrc::kBadVersion)) return false;
      RDMQ_LOG(kWarn, "cluster", "fenced: a newer controller was elected").kv("broker", opts_.self.id);
      controller_.store(false);
      return true;
    };
    // In groups, each one transaction (a new topic's thousand partitions are a few writes to
    // ZooKeeper's log, not a thousand); a group that fails on a lost race (a leader changed the
    // ISR, the topic was deleted) is written again one change at a time, so that the others land
    // and the next round sees the race.
    constexpr size_t kGroup = 200;
    for (size_t first = 0; first < changes.size(); first += kGroup) {
      const size_t end = std::min(changes.size(), first + kGroup);
      std::vector<MultiOp> ops{MultiOp::Check(layout_.controller_epoch(), epoch_version_)};
      for (size_t i = first; i < end; ++i) ops.push_back(write_of(changes[i]));
      size_t failed = 0;
      Status s = zk.Multi(ops, &failed);
      if (fenced(s, failed)) return wrote;
      for (size_t i = first; i < end; ++i) {
        const StateChange& c = changes[i];
        if (!s.ok()) {
          const Status one = zk.Multi({ops.front(), write_of(c)}, &failed);
          if (fenced(one, failed)) return wrote;
          if (!one.ok()) {
            Refresh();
            continue;
          }
        }
        wrote = true;
        RDMQ_LOG(kInfo, "cluster", "partition state changed")
            .kv("partition", c.tp.topic + "-" + std::to_string(c.tp.partition))
            .kv("leader", c.next.leader)
            .kv("leader_epoch", c.next.leader_epoch)
            .kv("isr", Brokers(c.next.isr))
            .kv("why", c.why);
      }
    }
    for (const auto& [name, topic] : view.topics) {
      for (const auto& [p, target] : topic.reassigning) {
        auto s = view.states.find({name, p});
        if (s == view.states.end()) continue;
        std::optional<PartitionState> next = FinishReassignment(target, s->second, live, epoch_);
        if (next && FinishMove(zk, name, p, target, s->second, *next)) wrote = true;
      }
    }
    return wrote;
  }

  // Completes a partition's move: its replicas become `target` and its state `next`, in one
  // write with the controller epoch, the topic's and the state's versions checked (a lost race:
  // the next round looks again). True when written.
  bool FinishMove(ZkSession& zk, const std::string& name, int32_t partition,
                  const std::vector<BrokerId>& target, const PartitionState& from,
                  const PartitionState& next) {
    auto n = zk.Get(layout_.topic(name));
    if (!n.ok()) return false;
    auto t = DecodeTopic(n->data, name, layout_.topic(name));
    if (!t.ok()) return false;
    auto moving = t->reassigning.find(partition);
    if (moving == t->reassigning.end() || moving->second != target) return false;
    t->reassigning.erase(moving);
    t->replicas[static_cast<size_t>(partition)] = target;
    const Status s =
        zk.Multi({MultiOp::Check(layout_.controller_epoch(), epoch_version_),
                  MultiOp::Set(layout_.topic(name), EncodeTopic(*t), n->stat.version),
                  MultiOp::Set(layout_.state(name, partition), EncodeState(next), from.version)});
    if (!s.ok()) {
      Refresh();
      return false;
    }
    RDMQ_LOG(kInfo, "cluster", "partition reassigned")
        .kv("partition", name + "-" + std::to_string(partition))
        .kv("replicas", Brokers(target))
        .kv("leader", next.leader)
        .kv("leader_epoch", next.leader_epoch);
    return true;
  }

  // A watcher for `path` if none is set on it yet (ZooKeeper keeps one per registration: setting
  // one at every read would pile them up).
  coord::Watcher Watch(const std::string& path) {
    {
      MutexLock lock(mu_);
      if (!watched_.insert(path).second) return nullptr;
    }
    return [this, path](coord::WatchEvent, const std::string&) {
      {
        MutexLock lock(mu_);
        watched_.erase(path);
        dirty_ = true;
      }
      wake_.NotifyAll();
    };
  }
  // A watch that was not set after all (the read failed).
  void Unwatch(const std::string& path) {
    MutexLock lock(mu_);
    watched_.erase(path);
  }
  // `read` (a ZooKeeper read of `path`) with a watch on `path` when `watch` is set; a failed read
  // leaves none.
  template <class Read>
  auto Watched(const std::string& path, bool watch, Read&& read) {
    auto r = read(watch ? Watch(path) : nullptr);
    if (!r.ok() && watch) Unwatch(path);
    return r;
  }

  Result<ClusterSnapshot> Read(ZkSession& zk, bool watch) {
    ClusterSnapshot s;
    RDMQ_ASSIGN_OR_RETURN(auto ids, Watched(layout_.brokers(), watch, [&](coord::Watcher wt) {
                            return zk.Children(layout_.brokers(), std::move(wt));
                          }));
    for (const auto& id : ids) {
      auto b = zk.Get(layout_.brokers() + "/" + id);
      if (!b.ok()) continue;  // gone meanwhile
      auto info = DecodeBroker(b->data, layout_.brokers() + "/" + id);
      if (info.ok()) s.brokers.emplace(info->id, *info);
    }
    if (auto c = zk.Get(layout_.controller()); c.ok()) {
      if (auto who = DecodeController(c->data, layout_.controller()); who.ok()) {
        s.controller = who->first;
        s.controller_epoch = who->second;
      }
    }
    RDMQ_ASSIGN_OR_RETURN(auto names, Watched(layout_.topics(), watch, [&](coord::Watcher wt) {
                            return zk.Children(layout_.topics(), std::move(wt));
                          }));
    // Every partition's state is read in one go (a znode each: one at a time, a thousand
    // partitions cost two thousand round trips to ZooKeeper at every refresh).
    std::vector<std::string> spaths;
    std::vector<std::pair<std::string, int32_t>> sof;  // the partition of each of spaths
    for (const auto& name : names) {
      const std::string tpath = layout_.topic(name);
      auto t = Watched(tpath, watch, [&](coord::Watcher wt) { return zk.Get(tpath, std::move(wt)); });
      if (!t.ok()) continue;
      auto topic = DecodeTopic(t->data, name, tpath);
      if (!topic.ok()) {
        RDMQ_LOG(kWarn, "cluster", "a topic znode rdmq cannot read is ignored").kv("error", topic.status());
        continue;
      }
      for (int32_t p = 0; p < static_cast<int32_t>(topic->replicas.size()); ++p) {
        spaths.push_back(layout_.state(name, p));
        sof.emplace_back(name, p);
      }
      s.topics.emplace(name, std::move(*topic));
    }
    std::vector<coord::Watcher> watches;
    if (watch) {
      watches.reserve(spaths.size());
      for (const auto& path : spaths) watches.push_back(Watch(path));
    }
    auto nodes = zk.GetMany(spaths, std::move(watches));
    for (size_t i = 0; i < spaths.size(); ++i) {
      const std::string& spath = spaths[i];
      if (!nodes[i].ok()) {
        if (watch) Unwatch(spath);
        continue;
      }
      if (!nodes[i]->has_value()) continue;  // the watch (if set) fires on its creation
      const coord::Node& node = **nodes[i];
      auto state = DecodeState(node.data, spath);
      if (!state.ok()) {
        RDMQ_LOG(kWarn, "cluster", "a partition state rdmq cannot read is ignored")
            .kv("error", state.status());
        continue;
      }
      state->version = node.stat.version;
      s.states.emplace(TopicPartition{sof[i].first, sof[i].second}, std::move(*state));
    }
    RDMQ_RETURN_IF_ERROR(ReadSecurity(zk, watch, &s.security));
    return s;
  }

  // The users' and the ACL list's znodes, each watched (a user's for its changes, the folder for
  // users made or deleted).
  Status ReadSecurity(ZkSession& zk, bool watch, SecurityRecords* out) {
    RDMQ_ASSIGN_OR_RETURN(auto names, Watched(layout_.users(), watch, [&](coord::Watcher wt) {
                            return zk.Children(layout_.users(), std::move(wt));
                          }));
    for (const auto& escaped : names) {
      const std::string path = layout_.user(escaped);
      auto u = Watched(path, watch, [&](coord::Watcher wt) { return zk.Get(path, std::move(wt)); });
      if (!u.ok()) continue;  // deleted meanwhile: the folder's watch fires
      auto name = UnescapeName(escaped);
      if (!name.ok()) {
        RDMQ_LOG(kWarn, "cluster", "a user znode rdmq cannot read is ignored").kv("error", name.status());
        continue;
      }
      out->users.emplace(std::move(*name), std::move(u->data));
    }
    RDMQ_ASSIGN_OR_RETURN(auto acls, Watched(layout_.acls(), watch, [&](coord::Watcher wt) {
                            return zk.Exists(layout_.acls(), std::move(wt));
                          }));
    if (acls.has_value()) {
      auto node = zk.Get(layout_.acls());
      if (node.ok()) out->acls = std::move(node->data);
    }
    return Status::Ok();
  }

  // Reads the topic, lets `change` edit it (and add operations), writes it back with
  // compare-and-set, retrying a lost race.
  Result<TopicAssignment> ChangeTopic(
      const std::string& name, const std::function<Status(TopicAssignment&, std::vector<MultiOp>*)>& change) {
    const auto zk = Zk();
    for (int attempt = 0; attempt < 20; ++attempt) {
      auto n = zk->Get(layout_.topic(name));
      if (!n.ok()) {
        if (n.status().is(CoordErrc::kNoNode)) return Status(Errc::kNotFound, "no topic '" + name + "'");
        return n.status();
      }
      RDMQ_ASSIGN_OR_RETURN(TopicAssignment t, DecodeTopic(n->data, name, layout_.topic(name)));
      std::vector<MultiOp> ops;
      RDMQ_RETURN_IF_ERROR(change(t, &ops));
      ops.insert(ops.begin(), MultiOp::Set(layout_.topic(name), EncodeTopic(t), n->stat.version));
      size_t failed = 0;
      const Status s = zk->Multi(ops, &failed);
      if (s.ok()) {
        Refresh();
        return t;
      }
      if (!(failed == 0 && s.is(CoordErrc::kBadVersion))) return s;
    }
    return Status(ClusterErrc::kStaleState, "topic '" + name + "' kept changing");
  }

  const AgentOptions opts_;
  const Layout layout_;
  AgentListener* const listener_;
  std::thread thread_;

  mutable Mutex cache_mu_;  // a leaf
  ClusterSnapshot cached_ GUARDED_BY(cache_mu_);

  mutable Mutex zk_mu_;  // a leaf
  std::shared_ptr<ZkSession> zk_ GUARDED_BY(zk_mu_);

  Mutex mu_;
  CondVar wake_;
  bool stop_ GUARDED_BY(mu_) = false;
  bool dirty_ GUARDED_BY(mu_) = true;
  std::set<std::string> watched_ GUARDED_BY(mu_);

  // The agent thread's own.
  std::atomic<bool> controller_{false};
  int32_t epoch_ = 0;
  int32_t epoch_version_ = -1;
  std::optional<ReplicaMap> last_;
  std::optional<SecurityRecords> last_security_;
  bool fenced_ = false;  // OnSessionLost was told of a disconnection not yet ended (the loop's)
};

}  // namespace

Result<std::unique_ptr<ClusterAgent>> ClusterAgent::Start(const AgentOptions& options,
                                                          AgentListener* listener) {
  auto a = std::make_unique<Agent>(options, listener);
  RDMQ_RETURN_IF_ERROR(a->Init());
  return std::unique_ptr<ClusterAgent>(std::move(a));
}

}  // namespace rdmq::cluster
