// ZkSession on libzookeeper-mt's synchronous API. The library runs two threads of its own (I/O
// and completions); every watcher callback, the session's included, runs on the completion
// thread.
#include "rdmq/coord/zk.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include "rdmq/common/log.h"
#include "rdmq/common/mutex.h"

namespace rdmq::coord {
namespace {

CoordErrc ErrcOf(int rc) {
  switch (rc) {
    case ZNONODE:
      return CoordErrc::kNoNode;
    case ZNODEEXISTS:
      return CoordErrc::kNodeExists;
    case ZBADVERSION:
      return CoordErrc::kBadVersion;
    case ZNOTEMPTY:
      return CoordErrc::kNotEmpty;
    case ZNOCHILDRENFOREPHEMERALS:
      return CoordErrc::kNoChildrenForEphemerals;
    case ZCONNECTIONLOSS:
      return CoordErrc::kConnectionLoss;
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
      return CoordErrc::kSessionExpired;
    case ZOPERATIONTIMEOUT:
      return CoordErrc::kOperationTimeout;
    case ZBADARGUMENTS:
      return CoordErrc::kBadArguments;
    case ZNOAUTH:
    case ZAUTHFAILED:
      return CoordErrc::kNoAuth;
    case ZCLOSING:
      return CoordErrc::kClosing;
    default:
      return CoordErrc::kOther;
  }
}

Status Failed(int rc, const std::string& what) { return Status(ErrcOf(rc), what + ": " + zerror(rc)); }

Stat FromZk(const ::Stat& s) {
  coord::Stat out;
  out.version = s.version;
  out.children_version = s.cversion;
  out.created_zxid = s.czxid;
  out.modified_zxid = s.mzxid;
  out.ephemeral_owner = s.ephemeralOwner;
  out.num_children = s.numChildren;
  return out;
}

int ModeFlags(CreateMode m) {
  switch (m) {
    case CreateMode::kPersistent:
      return ZOO_PERSISTENT;
    case CreateMode::kEphemeral:
      return ZOO_EPHEMERAL;
    case CreateMode::kPersistentSequential:
      return ZOO_PERSISTENT_SEQUENTIAL;
    case CreateMode::kEphemeralSequential:
      return ZOO_EPHEMERAL_SEQUENTIAL;
  }
  return ZOO_PERSISTENT;
}

// The client library's own log lines, at debug level (it reports every failed reconnect as an
// error; the session's state changes are logged by us, once).
void LogFromZk(const char* message) { RDMQ_LOG(kDebug, "zookeeper", message); }

class Session;

// A watch's callback and its session, owned by the session until the watch fires (or the
// session ends).
struct WatchCtx {
  Session* session;
  Watcher fn;
};

// The reads of one GetMany window: the completions (on the library's thread) fill in each
// path's outcome and count down; the caller waits for the count to reach zero. The outcomes need
// no lock of their own: each is written before its Done, and read only after Wait, which the
// count's mutex orders after every Done.
struct PipelinedReads {
  struct One {
    PipelinedReads* reads = nullptr;
    WatchCtx* watch = nullptr;
    int exists_rc = ZOK;  // ZNONODE: not there
    int data_rc = ZOK;
    Node node;
  };
  explicit PipelinedReads(size_t n) : one(n) {}
  void Issued() {
    MutexLock lock(mu);
    ++pending;
  }
  void Done() {
    bool last;
    {
      MutexLock lock(mu);
      last = --pending == 0;
    }
    if (last) cv.NotifyAll();
  }
  // A request that was not sent: its outcome is `rc`, and no completion will count it down.
  void Failed(int* outcome, int rc) {
    *outcome = rc;
    Done();
  }
  void Wait() {
    UniqueLock lock(mu);
    while (pending != 0) cv.Wait(lock);
  }
  std::vector<One> one;
  Mutex mu;
  CondVar cv;
  size_t pending GUARDED_BY(mu) = 0;
};

class Session final : public ZkSession {
 public:
  explicit Session(SessionOptions o) : opts_(std::move(o)) {}
  ~Session() override {
    if (zh_ != nullptr) zookeeper_close(zh_);  // joins the library's threads
    MutexLock lock(watch_mu_);
    for (WatchCtx* w : watches_) delete w;
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  Status Open() {
    if (opts_.connect.empty()) return Status(CoordErrc::kBadArguments, "no ZooKeeper connect string");
    zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
    zh_ = zookeeper_init2(opts_.connect.c_str(), &Session::OnSession,
                          static_cast<int>(opts_.session_timeout.count()), nullptr, this, 0, &LogFromZk);
    if (zh_ == nullptr) {
      return Status(CoordErrc::kBadArguments, "ZooKeeper connect string '" + opts_.connect + "'");
    }
    const auto deadline = std::chrono::steady_clock::now() + opts_.connect_timeout;
    UniqueLock lock(state_mu_);
    while (state_ == SessionState::kDisconnected) {
      if (!state_cv_.WaitUntil(lock, deadline) && state_ == SessionState::kDisconnected) {
        return Status(CoordErrc::kConnectionLoss, "no ZooKeeper answered at " + opts_.connect + " within " +
                                                      std::to_string(opts_.connect_timeout.count()) + " ms");
      }
    }
    if (state_ == SessionState::kExpired) {
      return Status(CoordErrc::kSessionExpired, "ZooKeeper at " + opts_.connect + " refused the session");
    }
    return Status::Ok();
  }

  Result<std::string> Create(const std::string& path, std::string_view data, CreateMode mode) override {
    std::string created(path.size() + 32, '\0');
    const int rc =
        zoo_create(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), &ZOO_OPEN_ACL_UNSAFE,
                   ModeFlags(mode), created.data(), static_cast<int>(created.size()));
    if (rc != ZOK) return Failed(rc, "create " + path);
    created.resize(std::strlen(created.c_str()));
    return created;
  }

  Status CreateParents(const std::string& path) override {
    for (size_t at = 1; at <= path.size(); ++at) {
      if (at != path.size() && path[at] != '/') continue;
      const std::string prefix = path.substr(0, at);
      auto made = Create(prefix, "", CreateMode::kPersistent);
      if (!made.ok() && !made.status().is(CoordErrc::kNodeExists)) return made.status();
    }
    return Status::Ok();
  }

  Result<Node> Get(const std::string& path, Watcher watch) override {
    Node n;
    n.data.resize(1 << 20);  // ZooKeeper's own limit on a znode's data (jute.maxbuffer)
    int len = static_cast<int>(n.data.size());
    ::Stat st{};
    WatchCtx* w = Arm(std::move(watch));
    const int rc = zoo_wget(zh_, path.c_str(), w ? &Session::OnWatch : nullptr, w, n.data.data(), &len, &st);
    if (rc != ZOK) {
      Disarm(w);
      return Failed(rc, "get " + path);
    }
    n.data.resize(len > 0 ? static_cast<size_t>(len) : 0);
    n.stat = FromZk(st);
    return n;
  }

  Result<std::optional<coord::Stat>> Exists(const std::string& path, Watcher watch) override {
    ::Stat st{};
    WatchCtx* w = Arm(std::move(watch));
    const int rc = zoo_wexists(zh_, path.c_str(), w ? &Session::OnWatch : nullptr, w, &st);
    if (rc == ZNONODE) return std::optional<coord::Stat>();  // the watch waits for its creation
    if (rc != ZOK) {
      Disarm(w);
      return Failed(rc, "exists " + path);
    }
    return std::optional<coord::Stat>(FromZk(st));
  }

  std::vector<Result<std::optional<Node>>> GetMany(const std::vector<std::string>& paths,
                                                   std::vector<Watcher> watches) override {
    std::vector<Result<std::optional<Node>>> out;
    out.reserve(paths.size());
    // In windows, so that the server never holds more than about a thousand of our requests
    // (its throttle for outstanding requests).
    constexpr size_t kWindow = 500;
    for (size_t first = 0; first < paths.size(); first += kWindow) {
      const size_t end = std::min(paths.size(), first + kWindow);
      PipelinedReads reads(end - first);
      for (size_t i = first; i < end; ++i) {
        PipelinedReads::One& r = reads.one[i - first];
        r.reads = &reads;
        r.watch = i < watches.size() ? Arm(std::move(watches[i])) : nullptr;
        // Exists sets the watch whether or not the node is there; the Get right behind it on the
        // same session sees the same state (a session's requests are answered in order).
        reads.Issued();  // before the call: its completion may come before the call returns
        const int rc = zoo_awexists(zh_, paths[i].c_str(), r.watch ? &Session::OnWatch : nullptr, r.watch,
                                    &Session::OnExists, &r);
        if (rc != ZOK) {  // not sent: no completion comes
          reads.Failed(&r.exists_rc, rc);
          continue;
        }
        reads.Issued();
        if (const int got = zoo_aget(zh_, paths[i].c_str(), 0, &Session::OnData, &r); got != ZOK) {
          reads.Failed(&r.data_rc, got);
        }
      }
      reads.Wait();
      for (size_t i = first; i < end; ++i) {
        PipelinedReads::One& r = reads.one[i - first];
        const int rc = r.exists_rc != ZOK && r.exists_rc != ZNONODE ? r.exists_rc : r.data_rc;
        if (rc != ZOK && rc != ZNONODE) {
          // The watch was set when Exists went through (the library keeps it, and fires or
          // drops it later); it is freed here only when Exists failed too.
          if (r.exists_rc != ZOK && r.exists_rc != ZNONODE) Disarm(r.watch);
          out.emplace_back(Failed(rc, "get " + paths[i]));
        } else if (r.exists_rc == ZNONODE || rc == ZNONODE) {
          out.emplace_back(std::optional<Node>());  // (deleted between the two: the watch fires)
        } else {
          out.emplace_back(std::optional<Node>(std::move(r.node)));
        }
      }
    }
    return out;
  }

  Result<coord::Stat> Set(const std::string& path, std::string_view data, int32_t version) override {
    ::Stat st{};
    const int rc = zoo_set2(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), version, &st);
    if (rc != ZOK) return Failed(rc, "set " + path);
    return FromZk(st);
  }

  Status Delete(const std::string& path, int32_t version) override {
    const int rc = zoo_delete(zh_, path.c_str(), version);
    return rc == ZOK ? Status::Ok() : Failed(rc, "delete " + path);
  }

  Result<std::vector<std::string>> Children(const std::string& path, Watcher watch) override {
    String_vector v{};
    WatchCtx* w = Arm(std::move(watch));
    const int rc = zoo_wget_children(zh_, path.c_str(), w ? &Session::OnWatch : nullptr, w, &v);
    if (rc != ZOK) {
      Disarm(w);
      return Failed(rc, "children of " + path);
    }
    std::vector<std::string> out;
    out.reserve(static_cast<size_t>(v.count));
    for (int i = 0; i < v.count; ++i) out.emplace_back(v.data[i]);
    deallocate_String_vector(&v);
    std::sort(out.begin(), out.end());
    return out;
  }

  Status Multi(const std::vector<MultiOp>& ops, size_t* failed) override {
    if (ops.empty()) return Status::Ok();
    std::vector<zoo_op_t> zops(ops.size());
    std::vector<zoo_op_result_t> results(ops.size());
    std::vector<std::string> created(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      const MultiOp& o = ops[i];
      switch (o.kind) {
        case MultiOp::Kind::kCheck:
          zoo_check_op_init(&zops[i], o.path.c_str(), o.version);
          break;
        case MultiOp::Kind::kCreate:
          created[i].assign(o.path.size() + 32, '\0');
          zoo_create_op_init(&zops[i], o.path.c_str(), o.data.data(), static_cast<int>(o.data.size()),
                             &ZOO_OPEN_ACL_UNSAFE, ModeFlags(o.mode), created[i].data(),
                             static_cast<int>(created[i].size()));
          break;
        case MultiOp::Kind::kSet:
          zoo_set_op_init(&zops[i], o.path.c_str(), o.data.data(), static_cast<int>(o.data.size()), o.version,
                          nullptr);
          break;
        case MultiOp::Kind::kDelete:
          zoo_delete_op_init(&zops[i], o.path.c_str(), o.version);
          break;
      }
    }
    const int rc = zoo_multi(zh_, static_cast<int>(zops.size()), zops.data(), results.data());
    if (rc == ZOK) return Status::Ok();
    for (size_t i = 0; i < ops.size(); ++i) {
      if (results[i].err != ZOK && results[i].err != ZRUNTIMEINCONSISTENCY) {
        if (failed != nullptr) *failed = i;
        return Failed(results[i].err, "multi, operation " + std::to_string(i) + " on " + ops[i].path);
      }
    }
    if (failed != nullptr) *failed = ops.size();
    return Failed(rc, "multi of " + std::to_string(ops.size()) + " operations");
  }

  int64_t session_id() const override {
    const clientid_t* id = zoo_client_id(zh_);
    return id != nullptr ? id->client_id : 0;
  }
  SessionState state() const override {
    MutexLock lock(state_mu_);
    return state_;
  }

 private:
  WatchCtx* Arm(Watcher fn) {
    if (!fn) return nullptr;
    auto* w = new WatchCtx{this, std::move(fn)};
    MutexLock lock(watch_mu_);
    watches_.insert(w);
    return w;
  }
  // Frees a watch that was never set (its call failed) or that fired.
  void Disarm(WatchCtx* w) {
    if (w == nullptr) return;
    {
      MutexLock lock(watch_mu_);
      if (watches_.erase(w) == 0) return;
    }
    delete w;
  }

  static void OnSession(zhandle_t*, int type, int state, const char*, void* ctx) {
    if (type != ZOO_SESSION_EVENT) return;
    auto* self = static_cast<Session*>(ctx);
    SessionState s = SessionState::kDisconnected;
    if (state == ZOO_CONNECTED_STATE) s = SessionState::kConnected;
    if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) s = SessionState::kExpired;
    {
      MutexLock lock(self->state_mu_);
      if (self->state_ == s) return;
      self->state_ = s;
    }
    self->state_cv_.NotifyAll();
    if (s == SessionState::kConnected) {
      RDMQ_LOG(kInfo, "zookeeper", "session connected").kv("connect", self->opts_.connect);
    } else {
      RDMQ_LOG(kWarn, "zookeeper",
               s == SessionState::kExpired ? "session expired" : "session disconnected; reconnecting")
          .kv("connect", self->opts_.connect);
    }
    if (self->opts_.on_state) self->opts_.on_state(s);
  }

  static void OnExists(int rc, const ::Stat*, const void* ctx) {
    auto* r = static_cast<PipelinedReads::One*>(const_cast<void*>(ctx));
    r->exists_rc = rc;
    r->reads->Done();
  }
  static void OnData(int rc, const char* value, int len, const ::Stat* st, const void* ctx) {
    auto* r = static_cast<PipelinedReads::One*>(const_cast<void*>(ctx));
    r->data_rc = rc;
    if (rc == ZOK) {
      r->node.data.assign(value != nullptr && len > 0 ? value : "", len > 0 ? static_cast<size_t>(len) : 0);
      if (st != nullptr) r->node.stat = FromZk(*st);
    }
    r->reads->Done();
  }

  static void OnWatch(zhandle_t*, int type, int state, const char* path, void* ctx) {
    auto* w = static_cast<WatchCtx*>(ctx);
    if (type == ZOO_SESSION_EVENT) {
      // Disconnections leave the watch set (the library sets it again on reconnection); only
      // the end of the session ends it.
      if (state != ZOO_EXPIRED_SESSION_STATE && state != ZOO_AUTH_FAILED_STATE) return;
    }
    WatchEvent e = WatchEvent::kSession;
    if (type == ZOO_CREATED_EVENT) e = WatchEvent::kCreated;
    if (type == ZOO_DELETED_EVENT) e = WatchEvent::kDeleted;
    if (type == ZOO_CHANGED_EVENT) e = WatchEvent::kChanged;
    if (type == ZOO_CHILD_EVENT) e = WatchEvent::kChildren;
    Session* self = w->session;
    {
      MutexLock lock(self->watch_mu_);
      if (self->watches_.erase(w) == 0) return;  // freed already
    }
    if (type != ZOO_NOTWATCHING_EVENT) w->fn(e, path != nullptr ? path : "");
    delete w;
  }

  const SessionOptions opts_;
  zhandle_t* zh_ = nullptr;
  mutable Mutex state_mu_;
  CondVar state_cv_;
  SessionState state_ GUARDED_BY(state_mu_) = SessionState::kDisconnected;
  Mutex watch_mu_;  // a leaf
  std::set<WatchCtx*> watches_ GUARDED_BY(watch_mu_);
};

}  // namespace

Result<std::unique_ptr<ZkSession>> ZkSession::Connect(const SessionOptions& options) {
  auto s = std::make_unique<Session>(options);
  RDMQ_RETURN_IF_ERROR(s->Open());
  return std::unique_ptr<ZkSession>(std::move(s));
}

std::string JoinPath(std::string_view parent, std::string_view child) {
  std::string out(parent);
  if (out.empty() || out.back() != '/') out += '/';
  out.append(child.starts_with('/') ? child.substr(1) : child);
  return out;
}

}  // namespace rdmq::coord
