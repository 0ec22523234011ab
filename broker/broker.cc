// The broker's lifecycle: start (recovery of the metadata and every partition, listeners,
// threads), graceful shutdown, and stats.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "broker/kafka/tls.h"
#include "broker_impl.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"
#include "rdmq/protocol/data_plane.h"

namespace rdmq::broker {
namespace internal {

BrokerImpl::BrokerImpl(BrokerConfig config) : cfg_(std::move(config)) {}

BrokerImpl::~BrokerImpl() {
  if (Status s = Shutdown(); !s.ok()) RDMQ_LOG(kWarn, "broker", "shutdown failed").kv("error", s);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status BrokerImpl::LockDataDir() {
  for (const std::string& d : {cfg_.data_dir, cfg_.data_dir + "/meta", cfg_.data_dir + "/topics"}) {
    std::error_code ec;
    std::filesystem::create_directories(d, ec);
    if (ec) return Status::FromErrno(ec.value(), "create the data directory " + d);
  }
  // One broker per data directory: a second one would take over the first one's sockets.
  const std::string lock_path = cfg_.data_dir + "/rdmq.lock";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) return Status::FromErrno(errno, "open " + lock_path);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder;
    std::ifstream(lock_path) >> holder;
    if (err == EWOULDBLOCK) {
      return Status(Errc::kFailedPrecondition, "data directory " + cfg_.data_dir +
                                                   " is in use by another rdmq-broker (pid " +
                                                   (holder.empty() ? "?" : holder) + ")");
    }
    return Status::FromErrno(err, "lock " + lock_path);
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0) {
    RDMQ_LOG(kWarn, "broker", "could not record the pid in the lock file").kv("file", lock_path);
  }
  return Status::Ok();
}

Status BrokerImpl::OpenFabrics() {
  RDMQ_ASSIGN_OR_RETURN(fabric::Provider provider, fabric::ParseProvider(cfg_.fabric));
  fabric::FabricOptions fo;
  fo.provider = provider;
  fo.device = cfg_.device;
  if (cfg_.RpcTls()) {
    // The files are checked as the Kafka listener's are, so that a bad one is named by its key.
    RDMQ_RETURN_IF_ERROR(MakeKafkaTls(cfg_).status());
    fo.tls.enabled = true;
    fo.tls.certificate = cfg_.ssl_certificate;
    fo.tls.key = cfg_.ssl_key;
    fo.tls.ca = cfg_.ssl_ca;
    fo.tls.client_auth = cfg_.ssl_client_auth == "required"    ? fabric::TlsOptions::ClientAuth::kRequired
                         : cfg_.ssl_client_auth == "requested" ? fabric::TlsOptions::ClientAuth::kRequested
                                                               : fabric::TlsOptions::ClientAuth::kNone;
  }
  fo.listen = cfg_.ControlAddress();
  auto cf = fabric::Fabric::Open(fo);
  if (!cf.ok()) return cf.status().WithContext("open the control listener " + fo.listen);
  control_fabric_ = std::move(*cf);
  fo.listen = cfg_.DataAddress();
  auto df = fabric::Fabric::Open(fo);
  if (!df.ok()) return df.status().WithContext("open the data listener " + fo.listen);
  data_fabric_ = std::move(*df);
  RDMQ_ASSIGN_OR_RETURN(data_send_cq_, data_fabric_->CreateCompletionQueue(1 << 16));
  RDMQ_ASSIGN_OR_RETURN(data_recv_cq_, data_fabric_->CreateCompletionQueue(1 << 16));
  const uint64_t acks = uint64_t{kMaxLeases} * protocol::kAckBlockSize;
  RDMQ_ASSIGN_OR_RETURN(staging_,
                        data_fabric_->Allocate(acks + uint64_t{kNotifySlots} * Publisher::kNotificationBytes,
                                               fabric::kLocalWrite));
  return Status::Ok();
}

Status BrokerImpl::Recover(size_t* partitions) {
  const std::vector<metadata::TopicInfo> all = meta_->ListTopics();
  std::vector<TopicTable::PartitionRef> which;
  for (const auto& t : all) {
    for (int32_t i = 0; i < t.config.partitions; ++i) which.push_back({&t, i});
  }
  std::vector<std::shared_ptr<Partition>> opened;
  RDMQ_RETURN_IF_ERROR(topics_->OpenPartitions(which, &opened));
  auto next = opened.begin();
  for (const auto& t : all) {
    Topic topic;
    topic.info = t;
    topic.partitions.assign(next, next + t.config.partitions);
    next += t.config.partitions;
    topics_->Insert(std::move(topic));
  }
  *partitions += opened.size();
  return Status::Ok();
}

Status BrokerImpl::StartKafka() {
  if (cfg_.listen_kafka == "off") return Status::Ok();
  KafkaDeps kd;
  kd.cfg = &cfg_;
  kd.meta = meta_.get();
  kd.topics = topics_.get();
  kd.admin = admin_.get();
  kd.groups = groups_.get();
  kd.appender = appender_.get();
  kd.counters = &n_;
  kd.authz = authz_.get();
  kd.cluster = cluster_.get();
  kd.users_deleted = &users_deleted_;
  kafka_handler_ = std::make_unique<KafkaFrontDoor>(kd);
  std::unique_ptr<boost::asio::ssl::context> tls;
  if (cfg_.KafkaTls()) {
    RDMQ_ASSIGN_OR_RETURN(tls, MakeKafkaTls(cfg_));
  }
  RDMQ_ASSIGN_OR_RETURN(
      kafka_, KafkaListener::Start(cfg_.listen_kafka, cfg_.kafka_threads, cfg_.kafka_max_request_bytes,
                                   *kafka_handler_, std::move(tls)));
  // Clients are told to connect where the broker is advertised: advertise.kafka, else the bound
  // address with the host's name for a wildcard address.
  std::string adv = cfg_.advertise_kafka.empty() ? kafka_->address() : cfg_.advertise_kafka;
  const size_t colon = adv.rfind(':');
  std::string host = adv.substr(0, colon);
  const int32_t port = std::stoi(adv.substr(colon + 1));
  if (host == "0.0.0.0" || host == "[::]") {
    char name[HOST_NAME_MAX + 1] = {};
    host = ::gethostname(name, sizeof name) == 0 ? name : "localhost";
  }
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  kafka_handler_->Attach(host, port, &kafka_->io());
  kafka_advertised_ = host + ":" + std::to_string(port);
  return Status::Ok();
}

Status BrokerImpl::Init() {
  const uint64_t t0 = MonoNanos();
  RDMQ_RETURN_IF_ERROR(Validate(cfg_));
  RDMQ_RETURN_IF_ERROR(LockDataDir());
  if (cfg_.listen_http != "off") {
    // First, so that an operator sees /healthz (and /readyz say "recovering") during recovery.
    auto h = metrics::HttpServer::Start(cfg_.listen_http,
                                        [this](const metrics::HttpRequest& r) { return ServeHttp(r); });
    if (!h.ok()) return h.status().WithContext("listen.http (set listen.http=HOST:PORT elsewhere, or off)");
    http_ = std::move(*h);
  }
  metadata::StoreOptions mo;
  mo.dir = cfg_.data_dir + "/meta";
  RDMQ_ASSIGN_OR_RETURN(meta_, metadata::MetadataStore::Open(mo));
  RDMQ_ASSIGN_OR_RETURN(offsets_, metadata::OffsetStore::Open(mo));
  groups_ = std::make_unique<GroupCoordinator>(cfg_, *meta_, *offsets_);
  authz_ = std::make_unique<Authorizer>(cfg_, *meta_, sessions_);
  RDMQ_RETURN_IF_ERROR(OpenFabrics());

  publisher_ = std::make_unique<Publisher>(data_fabric_->provider(), staging_.get(),
                                           uint64_t{kMaxLeases} * protocol::kAckBlockSize, kNotifySlots, n_);
  leases_ = std::make_unique<LeaseManager>(kMaxLeases, staging_.get(), cfg_.lease_ms, cfg_.lease_idle_ms, n_);
  PartitionOptions po;
  po.fabric = data_fabric_.get();
  po.data_dir = cfg_.data_dir;
  po.lease_ms = cfg_.lease_ms;
  po.checkpoint_interval_ms = cfg_.checkpoint_interval_ms;
  topics_ =
      std::make_unique<TopicTable>(std::move(po), cfg_.log_open_threads, *leases_, *publisher_, stopping_);

  size_t partitions = 0;
  if (cfg_.Clustered()) {
    // The partitions to open are the replicas the cluster gives this broker (at the end of Init).
    cluster_ = std::make_unique<ClusterMember>(cfg_, *meta_, *topics_, *groups_, *publisher_);
    groups_->SetTopicSource([this] { return cluster_->CachedTopics(); });
    topics_->SetClusterTopics(
        [this](const std::string& topic) { return cluster_->View().topics.count(topic) != 0; });
    groups_->SetOffsetBook(ClusterOffsetBook(*cluster_));
    cluster_->SetSecurityListener([this](const std::vector<std::string>& deleted, bool acls_changed) {
      for (const std::string& u : deleted) CutOffUser(u);
      if (acls_changed) {
        authz_->Reload();
        RevokeDenied();
      }
    });
  } else {
    RDMQ_RETURN_IF_ERROR(Recover(&partitions));
  }

  rpc::ServerOptions so;
  so.worker_threads = cfg_.rpc_workers;
  RDMQ_ASSIGN_OR_RETURN(rpc_, rpc::Server::Create(*control_fabric_, so));
  admin_ = std::make_unique<AdminHandlers>(cfg_, *data_fabric_, *meta_, sessions_, *topics_, *groups_,
                                           *authz_, cluster_.get());
  group_rpcs_ = std::make_unique<GroupHandlers>(*groups_, sessions_, *authz_, cluster_.get());
  user_rpcs_ = std::make_unique<UserHandlers>(
      *meta_, *authz_, [this](const std::string& u) { CutOffUser(u); }, cluster_.get());
  acl_rpcs_ = std::make_unique<AclHandlers>(
      *meta_, *authz_, [this] { RevokeDenied(); }, cluster_.get());
  produce_ = std::make_unique<ProduceHandlers>(sessions_, *topics_, *leases_, *publisher_, n_, *authz_);
  consume_ = std::make_unique<ConsumeHandlers>(sessions_, *topics_, *authz_);
  if (cluster_) {
    replica_rpcs_ =
        std::make_unique<ReplicaHandlers>(sessions_, *topics_, *leases_, *publisher_, n_, *authz_);
    replica_rpcs_->SetRestart([this](const std::string& topic, PartitionId index, Offset start) {
      return cluster_->RestartReplica(topic, index, start);
    });
  }
  appender_ = std::make_unique<LocalAppender>(*leases_, *publisher_, n_);
  login_ = std::make_unique<RpcLogin>(cfg_, *meta_, sessions_);
  RDMQ_RETURN_IF_ERROR(login_->Register(*rpc_));
  {
    // Every other handler checks the login first when one is asked (rpc_login.h).
    const std::unique_ptr<rpc::Server> gate = login_->Gate(*rpc_);
    rpc::Server& server = gate ? *gate : *rpc_;
    RDMQ_RETURN_IF_ERROR(admin_->Register(server));
    RDMQ_RETURN_IF_ERROR(produce_->Register(server));
    if (replica_rpcs_) RDMQ_RETURN_IF_ERROR(replica_rpcs_->Register(server));
    RDMQ_RETURN_IF_ERROR(consume_->Register(server));
    RDMQ_RETURN_IF_ERROR(group_rpcs_->Register(server));
    RDMQ_RETURN_IF_ERROR(user_rpcs_->Register(server));
    RDMQ_RETURN_IF_ERROR(acl_rpcs_->Register(server));
  }
  rpc_->OnDisconnect([this](uint64_t client_id) {
    login_->Forget(client_id);
    EndSession(client_id, "RPC connection closed");
  });

  if (cfg_.segment_preallocate) preparer_ = std::make_unique<SegmentPreparer>(n_);
  CommitPoller::Deps cd;
  cd.preparer = preparer_.get();
  cd.recv_cq = data_recv_cq_.get();
  cd.send_cq = data_send_cq_.get();
  cd.sessions = &sessions_;
  cd.leases = leases_.get();
  cd.publisher = publisher_.get();
  cd.counters = &n_;
  cd.end_session = [this](uint64_t client_id, const char* why) { EndSession(client_id, why); };
  committer_ = std::make_unique<CommitPoller>(std::move(cd), cfg_.data_spin_us, stopping_);
  housekeeper_ = std::make_unique<Housekeeper>(
      Housekeeper::Intervals{cfg_.lease_ms, cfg_.checkpoint_interval_ms, cfg_.retention_check_interval_ms},
      *topics_, *leases_, *publisher_, n_, preparer_.get(), stopping_);
  acceptor_ =
      std::make_unique<DataAcceptor>(*data_fabric_, *data_send_cq_, *data_recv_cq_, kRecvDepth, sessions_);
  if (preparer_) preparer_->Start();
  committer_->Start();
  housekeeper_->Start();
  groups_->Start();
  acceptor_->Start();
  RDMQ_RETURN_IF_ERROR(rpc_->Start());
  RDMQ_RETURN_IF_ERROR(StartKafka());
  if (cluster_) {
    const cluster::BrokerInfo self{static_cast<int32_t>(cfg_.broker_id), control_fabric_->address(),
                                   data_fabric_->address(), kafka_advertised_, cfg_.fabric};
    RDMQ_RETURN_IF_ERROR(cluster_->Start(self));
    partitions = topics_->partition_count();
  }

  {
    std::ofstream addr(cfg_.data_dir + "/rdmq.addr", std::ios::trunc);
    addr << "control " << control_fabric_->address() << "\n"
         << "data " << data_fabric_->address() << "\n";
    if (kafka_) addr << "kafka " << kafka_->address() << "\n";
    if (http_) addr << "http " << http_->address() << "\n";
  }
  phase_.store(Phase::kServing, std::memory_order_release);
  RDMQ_LOG(kInfo, "broker", "broker started")
      .kv("control", control_fabric_->address())
      .kv("data", data_fabric_->address())
      .kv("kafka", kafka_ ? kafka_->address() : "off")
      .kv("http", http_ ? http_->address() : "off")
      .kv("fabric", cfg_.fabric)
      .kv("cluster", cfg_.Clustered() ? cfg_.cluster_zookeeper : "off")
      .kv("data_dir", cfg_.data_dir)
      .kv("topics", static_cast<uint64_t>(topics_->topic_count()))
      .kv("partitions", static_cast<uint64_t>(partitions))
      .kv("seconds", static_cast<double>(MonoNanos() - t0) / 1e9);
  return Status::Ok();
}

void BrokerImpl::EndSession(uint64_t client_id, const char* why) {
  std::shared_ptr<Session> s = sessions_.Remove(client_id);
  if (!s) return;
  std::vector<LeaseId> ids;
  {
    MutexLock slock(s->mu);
    ids.assign(s->leases.begin(), s->leases.end());
  }
  for (LeaseId id : ids) leases_->EndById(id, protocol::WireError::kLeaseExpired, false);
  std::vector<std::weak_ptr<Partition>> read;
  {
    MutexLock slock(s->mu);
    read.swap(s->read_partitions);
  }
  for (const auto& w : read) {
    if (auto p = w.lock()) {
      MutexLock plock(p->mu);
      p->DropReadGrants(client_id);
    }
  }
  {
    MutexLock slock(s->mu);
    s->closed = true;
    if (s->ep) s->ep->Close();
  }
  RDMQ_LOG(kDebug, "broker", "client gone")
      .kv("client", client_id)
      .kv("name", s->Name())
      .kv("why", why)
      .kv("leases", ids.size());
}

void BrokerImpl::RevokeDenied() {
  if (!authz_->enabled()) return;
  using metadata::AclOperation;
  using metadata::AclResourceType;
  std::unordered_map<uint64_t, std::string> users;  // client id -> user
  size_t leases = 0, grants = 0;
  for (uint64_t id : sessions_.ClientIds()) {
    std::shared_ptr<Session> s = sessions_.Find(id);
    if (!s) continue;
    users[id] = std::string(ActingUser(s->Principal()));
    std::vector<LeaseId> ids;
    {
      MutexLock slock(s->mu);
      ids.assign(s->leases.begin(), s->leases.end());
    }
    for (LeaseId lid : ids) {
      auto l = leases_->Find(lid, id);
      if (l.ok() && !authz_->Allowed(users[id], AclOperation::kWrite, AclResourceType::kTopic,
                                     (*l)->partition->topic_name())) {
        leases_->End(*l, protocol::WireError::kTopicAuthorizationFailed, true);
        ++leases;
      }
    }
  }
  for (const auto& p : topics_->AllPartitions()) {
    MutexLock plock(p->mu);
    grants += p->DropReadGrantsIf([&](uint64_t client) {
      auto u = users.find(client);
      return u == users.end() ||
             !authz_->Allowed(u->second, AclOperation::kRead, AclResourceType::kTopic, p->topic_name());
    });
  }
  RDMQ_LOG(kInfo, "broker", "ACLs changed; access they no longer allow revoked")
      .kv("leases", static_cast<uint64_t>(leases))
      .kv("read_grants", static_cast<uint64_t>(grants));
}

void BrokerImpl::CutOffUser(const std::string& user) {
  users_deleted_.fetch_add(1);
  for (uint64_t id : sessions_.ClientIds()) {
    std::shared_ptr<Session> s = sessions_.Find(id);
    if (!s || s->User() != user) continue;
    RDMQ_LOG(kInfo, "broker", "deleted user's client disconnected").kv("client", id).kv("user", user);
    rpc_->Disconnect(id);
    EndSession(id, "its user was deleted");
  }
}

Status BrokerImpl::Shutdown() {
  MutexLock guard(shutdown_mu_);
  if (shut_down_) return Status::Ok();
  shut_down_ = true;
  const uint64_t t0 = MonoNanos();
  RDMQ_LOG(kInfo, "broker", "shutting down");
  phase_.store(Phase::kStopping, std::memory_order_release);
  if (http_) http_->Stop();  // no scrape runs past this point
  // 0. Leave the cluster, so that its partitions get other leaders now rather than when the
  // session times out.
  if (cluster_) cluster_->Stop();
  // 1. Stop accepting: data endpoints, then RPCs (which closes every connection handle).
  if (acceptor_) acceptor_->Stop();
  if (rpc_) rpc_->Stop();
  if (kafka_) kafka_->Stop();
  // 2. Finish the commits already delivered (the poller drains its queue before it stops).
  stopping_.store(true, std::memory_order_release);
  if (housekeeper_) housekeeper_->Stop();
  if (groups_) groups_->Stop();
  if (committer_) committer_->Join();
  if (preparer_) preparer_->Stop();  // before the logs close (a spare it made is deleted there)
  // 3. End every client's leases, then checkpoint and close every log.
  if (leases_) {
    for (uint64_t id : sessions_.ClientIds()) EndSession(id, "broker shutting down");
  }
  size_t closed = 0;
  if (topics_) {
    for (auto& p : topics_->RemoveAll()) {
      topics_->Close(*p, false);
      ++closed;
    }
  }
  Status result;
  if (meta_) {
    result = meta_->Checkpoint();
    if (!result.ok()) RDMQ_LOG(kWarn, "broker", "metadata checkpoint failed").kv("error", result);
  }
  if (offsets_) {
    Status s = offsets_->Checkpoint();
    if (!s.ok()) RDMQ_LOG(kWarn, "broker", "offset checkpoint failed").kv("error", s);
    if (result.ok()) result = s;
  }
  rpc_.reset();
  if (topics_) topics_->ClearBuried();
  std::error_code ec;
  std::filesystem::remove(cfg_.data_dir + "/rdmq.addr", ec);
  RDMQ_LOG(kInfo, "broker", "broker stopped")
      .kv("partitions_closed", static_cast<uint64_t>(closed))
      .kv("seconds", static_cast<double>(MonoNanos() - t0) / 1e9);
  return result;
}

std::string BrokerImpl::control_address() const { return control_fabric_ ? control_fabric_->address() : ""; }
std::string BrokerImpl::data_address() const { return data_fabric_ ? data_fabric_->address() : ""; }
std::string BrokerImpl::kafka_address() const { return kafka_ ? kafka_->address() : ""; }
std::string BrokerImpl::http_address() const { return http_ ? http_->address() : ""; }

Broker::Stats BrokerImpl::stats() const {
  Stats s;
  s.commits = n_.commits.load();
  s.commit_errors = n_.commit_errors.load();
  s.acks = n_.acks.load();
  s.leases_granted = n_.leases_granted.load();
  s.leases_expired = n_.leases_expired.load();
  s.leases_idle = n_.leases_idle.load();
  s.notifications = n_.notifications.load();
  s.duplicates = n_.duplicates.load();
  s.poller_wakeups = n_.poller_wakeups.load();
  s.poller_spins = n_.poller_spins.load();
  s.commit_groups = n_.commit_groups.load();
  s.commit_groups_split = n_.commit_groups_split.load();
  s.spare_segments = n_.spare_segments.load();
  s.spare_segments_failed = n_.spare_segments_failed.load();
  s.sessions = sessions_.size();
  s.partitions = topics_ ? topics_->partition_count() : 0;
  return s;
}

}  // namespace internal

Result<std::unique_ptr<Broker>> Broker::Start(const BrokerConfig& config) {
  auto b = std::make_unique<internal::BrokerImpl>(config);
  if (Status s = b->Init(); !s.ok()) {
    (void)b->Shutdown();
    return s;
  }
  return std::unique_ptr<Broker>(std::move(b));
}

}  // namespace rdmq::broker
