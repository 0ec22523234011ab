// The broker's lifecycle: start (recovery of the metadata and every partition, listeners,
// threads), graceful shutdown, and stats.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "broker_impl.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"

namespace rdmq::broker {
namespace internal {

BrokerImpl::BrokerImpl(BrokerConfig config) : cfg_(std::move(config)) {}

BrokerImpl::~BrokerImpl() {
  if (Status s = Shutdown(); !s.ok()) RDMQ_LOG(kWarn, "broker", "shutdown failed").kv("error", s);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status BrokerImpl::Init() {
  const uint64_t t0 = MonoNanos();
  RDMQ_RETURN_IF_ERROR(Validate(cfg_));
  env_ = storage::DefaultEnv();
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

  metadata::StoreOptions mo;
  mo.dir = cfg_.data_dir + "/meta";
  RDMQ_ASSIGN_OR_RETURN(meta_, metadata::MetadataStore::Open(mo));

  RDMQ_ASSIGN_OR_RETURN(fabric::Provider provider, fabric::ParseProvider(cfg_.fabric));
  fabric::FabricOptions fo;
  fo.provider = provider;
  fo.device = cfg_.device;
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
  RDMQ_ASSIGN_OR_RETURN(staging_, data_fabric_->Allocate(uint64_t{kMaxLeases} * protocol::kAckBlockSize +
                                                             uint64_t{kNotifySlots} * 32,
                                                         fabric::kLocalWrite));
  lease_slots_.resize(kMaxLeases);
  lease_reuse_.assign(kMaxLeases, 0);
  for (uint32_t i = kMaxLeases; i > 0; --i) free_slots_.push_back(i - 1);

  // Recovery: every partition of every topic.
  size_t partitions = 0;
  for (const auto& t : meta_->ListTopics()) {
    auto topic = std::make_shared<Topic>();
    topic->info = t;
    for (int32_t i = 0; i < t.config.partitions; ++i) {
      RDMQ_ASSIGN_OR_RETURN(auto p, OpenPartition(t, i));
      topic->partitions.push_back(std::move(p));
      ++partitions;
    }
    topics_[t.name] = std::move(topic);
  }

  rpc::ServerOptions so;
  so.worker_threads = cfg_.rpc_workers;
  RDMQ_ASSIGN_OR_RETURN(rpc_, rpc::Server::Create(*control_fabric_, so));
  RDMQ_RETURN_IF_ERROR(RegisterHandlers());
  rpc_->OnDisconnect([this](uint64_t client_id) { EndSession(client_id, "RPC connection closed"); });

  last_checkpoint_ns_ = last_retention_ns_ = MonoNanos();
  committer_ = std::thread([this] { CommitLoop(); });
  housekeeper_ = std::thread([this] { HousekeepingLoop(); });
  acceptor_ = std::thread([this] { AcceptLoop(); });
  RDMQ_RETURN_IF_ERROR(rpc_->Start());

  {
    std::ofstream addr(cfg_.data_dir + "/rdmq.addr", std::ios::trunc);
    addr << "control " << control_fabric_->address() << "\n"
         << "data " << data_fabric_->address() << "\n";
  }
  RDMQ_LOG(kInfo, "broker", "broker started")
      .kv("control", control_fabric_->address())
      .kv("data", data_fabric_->address())
      .kv("fabric", cfg_.fabric)
      .kv("data_dir", cfg_.data_dir)
      .kv("topics", static_cast<uint64_t>(topics_.size()))
      .kv("partitions", static_cast<uint64_t>(partitions))
      .kv("seconds", static_cast<double>(MonoNanos() - t0) / 1e9);
  return Status::Ok();
}

Status BrokerImpl::Shutdown() {
  std::lock_guard guard(shutdown_mu_);
  if (shut_down_) return Status::Ok();
  shut_down_ = true;
  const uint64_t t0 = MonoNanos();
  RDMQ_LOG(kInfo, "broker", "shutting down");
  // 1. Stop accepting: data endpoints, then RPCs (which closes every connection handle).
  accepting_.store(false, std::memory_order_release);
  if (acceptor_.joinable()) acceptor_.join();
  if (rpc_) rpc_->Stop();
  // 2. Finish the commits already delivered (the poller drains its queue before it stops).
  stopping_.store(true, std::memory_order_release);
  hk_cv_.notify_all();
  if (housekeeper_.joinable()) housekeeper_.join();
  if (committer_.joinable()) committer_.join();
  // 3. End every client's leases, then checkpoint and close every log.
  std::vector<uint64_t> clients;
  {
    std::lock_guard lock(sessions_mu_);
    for (const auto& [id, s] : sessions_) clients.push_back(id);
  }
  for (uint64_t id : clients) EndSession(id, "broker shutting down");
  std::map<std::string, std::shared_ptr<Topic>> topics;
  {
    std::lock_guard lock(topics_mu_);
    topics.swap(topics_);
  }
  size_t closed = 0;
  for (auto& [name, t] : topics) {
    for (auto& p : t->partitions) {
      ClosePartition(*p, false);
      ++closed;
    }
  }
  Status result;
  if (meta_) {
    result = meta_->Checkpoint();
    if (!result.ok()) RDMQ_LOG(kWarn, "broker", "metadata checkpoint failed").kv("error", result);
  }
  rpc_.reset();
  {
    std::lock_guard g(graveyard_mu_);
    graveyard_.clear();
  }
  std::error_code ec;
  std::filesystem::remove(cfg_.data_dir + "/rdmq.addr", ec);
  RDMQ_LOG(kInfo, "broker", "broker stopped")
      .kv("partitions_closed", static_cast<uint64_t>(closed))
      .kv("seconds", static_cast<double>(MonoNanos() - t0) / 1e9);
  return result;
}

std::string BrokerImpl::control_address() const { return control_fabric_ ? control_fabric_->address() : ""; }
std::string BrokerImpl::data_address() const { return data_fabric_ ? data_fabric_->address() : ""; }

Broker::Stats BrokerImpl::stats() const {
  Stats s;
  s.commits = n_.commits.load();
  s.commit_errors = n_.commit_errors.load();
  s.acks = n_.acks.load();
  s.leases_granted = n_.leases_granted.load();
  s.leases_expired = n_.leases_expired.load();
  s.notifications = n_.notifications.load();
  s.duplicates = n_.duplicates.load();
  {
    std::lock_guard lock(sessions_mu_);
    s.sessions = sessions_.size();
  }
  {
    std::lock_guard lock(topics_mu_);
    for (const auto& [n, t] : topics_) s.partitions += t->partitions.size();
  }
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
