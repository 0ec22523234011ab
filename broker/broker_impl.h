// BrokerImpl: the broker (broker.h) as its pieces, built and started in order by Init and
// stopped in reverse by Shutdown:
//
//   SessionTable    clients (session.h)          LeaseTable/LeaseManager  leases (lease*.h)
//   TopicTable      topics, partitions, graveyard Partition               one partition's state
//   Publisher       slot wake-ups, Watches       CommitValidator         commit checks (sans-I/O)
//   CommitPoller    the data plane's thread      ProducerStateTable      idempotence (sans-I/O)
//   DataAcceptor    data endpoint handshakes     Housekeeper             expiry, retention, checkpoints
//   GroupCoordinator consumer groups (group::Group) and committed offsets (metadata::OffsetStore)
//   Authorizer      the ACL decision both front doors ask (authorizer.h)
//   ClusterMember   in a cluster: the ZooKeeper agent, the replicas held, topic administration
//   AdminHandlers, ProduceHandlers, ReplicaHandlers (a follower's, in a cluster), ConsumeHandlers,
//                   GroupHandlers, UserHandlers, AclHandlers:
//                   the RPCs, grouped by concern
//   KafkaListener, KafkaFrontDoor (kafka/): the Kafka protocol's front door; LocalAppender: its
//                   appends, as one more shared writer
//
// Lock order (outer to inner): the topic table → Partition::mu → the lease table, the session
// table, a Session's mu (the session table's lock is also taken inside a Session's) → the
// PartitionLog's own mutex. Nothing slow (file creation, fsync) runs under the tables' locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "acl_handlers.h"
#include "admin_handlers.h"
#include "authorizer.h"
#include "broker/kafka/front_door.h"
#include "broker/kafka/listener.h"
#include "cluster_member.h"
#include "commit_poller.h"
#include "consume_handlers.h"
#include "counters.h"
#include "data_acceptor.h"
#include "group_coordinator.h"
#include "group_handlers.h"
#include "housekeeper.h"
#include "lease_manager.h"
#include "local_append.h"
#include "produce_handlers.h"
#include "publisher.h"
#include "rdmq/broker/broker.h"
#include "rdmq/broker/config.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/metadata/offsets.h"
#include "rdmq/metadata/store.h"
#include "rdmq/metrics/http.h"
#include "rdmq/rpc/server.h"
#include "replica_handlers.h"
#include "rpc_login.h"
#include "segment_preparer.h"
#include "session.h"
#include "topic_table.h"
#include "user_handlers.h"

namespace rdmq::broker::internal {

class BrokerImpl final : public Broker {
 public:
  explicit BrokerImpl(BrokerConfig config);
  ~BrokerImpl() override;

  // Validates the config, takes the data directory's lock, recovers the metadata and every
  // partition, opens the listeners and starts the threads.
  Status Init();
  Status Shutdown() override EXCLUDES(shutdown_mu_);
  std::string control_address() const override;
  std::string data_address() const override;
  std::string kafka_address() const override;
  std::string http_address() const override;
  Stats stats() const override;

 private:
  Status LockDataDir();
  Status OpenFabrics();
  Status Recover(size_t* partitions);
  Status StartKafka();
  // A client left (its RPC connection or data endpoint closed, or the broker stops): its leases
  // end, its endpoint closes.
  void EndSession(uint64_t client_id, const char* why);
  // After an ACL change: ends every lease whose client's user may no longer write its topic
  // (the producer's last ack says TOPIC_AUTHORIZATION_FAILED) and every read grant whose
  // client's user may no longer read it.
  void RevokeDenied();
  // A user was deleted: its control-path clients are disconnected (the Kafka listener closes its
  // connections at their next request).
  void CutOffUser(const std::string& user);

  // The HTTP endpoint (metrics_view.cc). A scrape reads the broker's parts only while it serves:
  // Init publishes kServing after the last part is built, and Shutdown stops the endpoint
  // (joining its thread) before it takes anything down.
  enum class Phase { kStarting, kServing, kStopping };
  metrics::HttpResponse ServeHttp(const metrics::HttpRequest& r) const;
  std::string Scrape(Phase phase) const;

  static constexpr uint32_t kMaxLeases = 16384;
  static constexpr uint32_t kNotifySlots = 4096;
  static constexpr uint32_t kRecvDepth = 512;

  const BrokerConfig cfg_;
  int lock_fd_ = -1;  // flock on <data.dir>/rdmq.lock
  // Stopped first at shutdown, destroyed last (declared first): partitions' commit waiters and
  // pending appends post to its io_context until the partitions are gone.
  std::unique_ptr<KafkaListener> kafka_;
  std::unique_ptr<metadata::MetadataStore> meta_;
  std::unique_ptr<metadata::OffsetStore> offsets_;
  std::unique_ptr<GroupCoordinator> groups_;
  std::unique_ptr<Authorizer> authz_;
  std::unique_ptr<ClusterMember> cluster_;  // in a cluster only
  std::string kafka_advertised_;            // host:port, "" when the Kafka listener is off
  std::atomic<uint64_t> users_deleted_{0};  // KafkaDeps: connections check their user again
  std::unique_ptr<fabric::Fabric> control_fabric_;
  std::unique_ptr<fabric::Fabric> data_fabric_;
  std::unique_ptr<fabric::CompletionQueue> data_send_cq_;
  std::unique_ptr<fabric::CompletionQueue> data_recv_cq_;
  std::unique_ptr<fabric::Region> staging_;  // ack blocks (one per lease slot), notifications

  Counters n_;
  std::atomic<bool> stopping_{false};
  std::atomic<Phase> phase_{Phase::kStarting};
  std::unique_ptr<metrics::HttpServer> http_;
  SessionTable sessions_;
  std::unique_ptr<Publisher> publisher_;
  std::unique_ptr<LeaseManager> leases_;
  std::unique_ptr<TopicTable> topics_;
  std::unique_ptr<AdminHandlers> admin_;
  std::unique_ptr<ProduceHandlers> produce_;
  std::unique_ptr<ReplicaHandlers> replica_rpcs_;  // in a cluster only
  std::unique_ptr<ConsumeHandlers> consume_;
  std::unique_ptr<GroupHandlers> group_rpcs_;
  std::unique_ptr<UserHandlers> user_rpcs_;
  std::unique_ptr<AclHandlers> acl_rpcs_;
  std::unique_ptr<RpcLogin> login_;
  std::unique_ptr<rpc::Server> rpc_;
  std::unique_ptr<DataAcceptor> acceptor_;
  std::unique_ptr<CommitPoller> committer_;
  std::unique_ptr<Housekeeper> housekeeper_;
  std::unique_ptr<SegmentPreparer> preparer_;  // null with log.segment.preallocate=false
  std::unique_ptr<LocalAppender> appender_;
  std::unique_ptr<KafkaFrontDoor> kafka_handler_;

  Mutex shutdown_mu_;
  bool shut_down_ GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace rdmq::broker::internal
