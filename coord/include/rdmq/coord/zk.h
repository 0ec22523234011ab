// ZooKeeper, through Debian's C client (libzookeeper-mt): where a cluster of rdmq brokers keeps
// its metadata and holds its elections (docs/replication.md). Consensus is ZooKeeper's; this is a
// thin, typed session over it.
//
//   auto zk = coord::ZkSession::Connect({.connect = "127.0.0.1:2181"});
//   (*zk)->Create("/rdmq/brokers/ids/1", json, coord::CreateMode::kEphemeral);
//   auto node = (*zk)->Get("/rdmq/topics/orders");                 // data and version
//   (*zk)->Set("/rdmq/topics/orders", next, node->stat.version);   // compare-and-set
//
// Calls are synchronous: each returns ZooKeeper's answer, or kConnectionLoss when none came
// within the session timeout (the outcome of a write is then unknown: read back before
// retrying). A session whose ZooKeeper ensemble did not hear from it for the session timeout is
// expired for good: every call fails with kSessionExpired, its ephemeral nodes are gone, and the
// owner must open a new session (and treat everything it held through the old one as lost).
//
// Watches are one-shot, as in ZooKeeper: the callback runs once, on the client library's
// completion thread, when the node (or its children) changes, or with kSession when the session
// expired or closed. Callbacks must not call the session (its completions run on that same
// thread): hand the event to a thread of your own.
//
// Threading: a session is thread-safe. Destroying it closes it (its ephemeral nodes go at once)
// after every callback has returned; callbacks of watches still set then run with kSession.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/errors.h"
#include "rdmq/common/status.h"

#define RDMQ_COORD_ERRORS(X)                                                         \
  X(kNoNode, kNotFound, "no such znode")                                             \
  X(kNodeExists, kAlreadyExists, "the znode exists")                                 \
  X(kBadVersion, kFailedPrecondition, "the znode's version changed (a lost race)")   \
  X(kNotEmpty, kFailedPrecondition, "the znode has children")                        \
  X(kNoChildrenForEphemerals, kInvalidArgument, "ephemeral znodes have no children") \
  X(kConnectionLoss, kUnavailable, "ZooKeeper did not answer (connection lost)")     \
  X(kSessionExpired, kUnavailable, "the ZooKeeper session expired")                  \
  X(kOperationTimeout, kTimeout, "ZooKeeper timed out")                              \
  X(kBadArguments, kInvalidArgument, "bad arguments to ZooKeeper")                   \
  X(kNoAuth, kPermissionDenied, "ZooKeeper refused: not authorized")                 \
  X(kClosing, kUnavailable, "the ZooKeeper session is closing")                      \
  X(kOther, kInternal, "ZooKeeper error")
RDMQ_DEFINE_ERRORS(rdmq::coord, CoordErrc, "coord", RDMQ_COORD_ERRORS)

namespace rdmq::coord {

struct Stat {
  int32_t version = -1;           // data version: the compare-and-set token
  int32_t children_version = -1;  // changes whenever a child is added or removed
  int64_t created_zxid = 0;
  int64_t modified_zxid = 0;
  int64_t ephemeral_owner = 0;  // the owning session's id (0: persistent)
  int32_t num_children = 0;
};

struct Node {
  std::string data;
  Stat stat;
};

enum class CreateMode { kPersistent, kEphemeral, kPersistentSequential, kEphemeralSequential };

// What a watch saw.
enum class WatchEvent { kCreated, kDeleted, kChanged, kChildren, kSession };
using Watcher = std::function<void(WatchEvent, const std::string& path)>;

// The session as a whole.
enum class SessionState { kConnected, kDisconnected, kExpired };

struct SessionOptions {
  std::string connect;  // "host:port[,host:port...]" (ZooKeeper's connect string)
  std::chrono::milliseconds session_timeout{6000};
  // How long Connect waits for the first connection before it gives up (kConnectionLoss).
  std::chrono::milliseconds connect_timeout{10000};
  // Told of every change of the session's state (on the client library's thread; see above).
  std::function<void(SessionState)> on_state;
};

// One operation of an atomic Multi: all of them happen, or none.
struct MultiOp {
  enum class Kind { kCheck, kCreate, kSet, kDelete } kind = Kind::kCheck;
  std::string path;
  std::string data;                           // kCreate, kSet
  int32_t version = -1;                       // kCheck, kSet, kDelete: the expected version (-1: any)
  CreateMode mode = CreateMode::kPersistent;  // kCreate
  static MultiOp Check(std::string p, int32_t v) { return {Kind::kCheck, std::move(p), {}, v}; }
  static MultiOp Create(std::string p, std::string d, CreateMode m = CreateMode::kPersistent) {
    return {Kind::kCreate, std::move(p), std::move(d), -1, m};
  }
  static MultiOp Set(std::string p, std::string d, int32_t v) {
    return {Kind::kSet, std::move(p), std::move(d), v};
  }
  static MultiOp Delete(std::string p, int32_t v) { return {Kind::kDelete, std::move(p), {}, v}; }
};

class ZkSession {
 public:
  // Connects and waits until the session is established (kConnectionLoss naming the connect
  // string after connect_timeout; kBadArguments for an empty or malformed connect string).
  static Result<std::unique_ptr<ZkSession>> Connect(const SessionOptions& options);
  virtual ~ZkSession() = default;

  // Creates `path` with `data`; returns the path created (a sequential mode appends a
  // 10-digit counter). kNodeExists, kNoNode (the parent is missing).
  virtual Result<std::string> Create(const std::string& path, std::string_view data, CreateMode mode) = 0;
  // Creates `path` and the persistent parents it lacks, all empty; a node already there is fine.
  virtual Status CreateParents(const std::string& path) = 0;
  virtual Result<Node> Get(const std::string& path, Watcher watch = nullptr) = 0;
  // The node's stat, or nullopt when it does not exist (the watch then fires on its creation).
  virtual Result<std::optional<Stat>> Exists(const std::string& path, Watcher watch = nullptr) = 0;
  // Reads many znodes with their requests pipelined on the session (one wait for all of them
  // instead of a round trip each: a cluster's state is a znode per partition). For each path:
  // the node, or nullopt when it does not exist. `watches` is empty or one per path; a watch set
  // there is Exists' (it fires on the node's change or deletion, or on its creation when it does
  // not exist) and is dropped when that path's read fails before the watch could be set.
  virtual std::vector<Result<std::optional<Node>>> GetMany(const std::vector<std::string>& paths,
                                                           std::vector<Watcher> watches = {}) = 0;
  // Replaces the data if the version is `version` (-1: any). kBadVersion, kNoNode.
  virtual Result<Stat> Set(const std::string& path, std::string_view data, int32_t version) = 0;
  // kBadVersion, kNoNode, kNotEmpty.
  virtual Status Delete(const std::string& path, int32_t version = -1) = 0;
  // The children's names (not paths), sorted.
  virtual Result<std::vector<std::string>> Children(const std::string& path, Watcher watch = nullptr) = 0;
  // All of `ops` or none; on failure the status names the first operation that failed, and
  // `failed` (when given) receives its index.
  virtual Status Multi(const std::vector<MultiOp>& ops, size_t* failed = nullptr) = 0;

  virtual int64_t session_id() const = 0;
  virtual SessionState state() const = 0;
};

// `parent` + "/" + `child`, without a doubled slash.
std::string JoinPath(std::string_view parent, std::string_view child);

}  // namespace rdmq::coord
