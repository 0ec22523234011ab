#include "topic_table.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <system_error>
#include <thread>

#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"

namespace rdmq::broker::internal {

using protocol::WireError;

namespace {

// Descriptors opened on /dev/null, to be given back when they are needed.
class FdReserve {
 public:
  explicit FdReserve(int n) {
    for (int i = 0; i < n; ++i) fds_.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
  ~FdReserve() { Release(); }
  FdReserve(const FdReserve&) = delete;
  FdReserve& operator=(const FdReserve&) = delete;
  void Release() {
    for (const int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
    fds_.clear();
  }

 private:
  std::vector<int> fds_;
};

}  // namespace

void TopicTable::InPool(size_t count, const std::function<bool(size_t)>& task) const {
  if (count == 0) return;
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  // Each worker takes the next index until none is left or a task said stop; they share
  // nothing but the two atomics.
  auto work = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      const size_t at = next.fetch_add(1, std::memory_order_relaxed);
      if (at >= count) return;
      if (!task(at)) stop.store(true, std::memory_order_relaxed);
    }
  };
  const size_t threads = std::min<size_t>(open_threads_, count);
  std::vector<std::thread> workers;
  workers.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) {
    try {
      workers.emplace_back(work);
    } catch (const std::system_error& e) {  // no thread to be had: fewer do the work
      RDMQ_LOG(kWarn, "broker", "opening partitions with fewer threads")
          .kv("threads", t)
          .kv("error", e.what());
      break;
    }
  }
  work();
  for (auto& w : workers) w.join();
}

std::vector<Result<std::shared_ptr<Partition>>> TopicTable::OpenEach(
    const std::vector<PartitionRef>& which) const {
  std::vector<Result<std::shared_ptr<Partition>>> out(which.size(), Status(Errc::kInternal, "not opened"));
  InPool(which.size(), [&](size_t at) {
    out[at] = OpenPartition(*which[at].topic, PartitionId(which[at].index));
    return true;
  });
  return out;
}

Status TopicTable::OpenPartitions(const metadata::TopicInfo& topic, int32_t first, int32_t end,
                                  std::vector<std::shared_ptr<Partition>>* opened) {
  std::vector<PartitionRef> which;
  for (int32_t i = first; i < end; ++i) which.push_back({&topic, i});
  return OpenPartitions(which, opened);
}

Status TopicTable::OpenPartitions(const std::vector<PartitionRef>& which,
                                  std::vector<std::shared_ptr<Partition>>* opened) {
  const size_t count = which.size();
  opened->assign(count, nullptr);
  if (count == 0) return Status::Ok();
  // Two descriptors held back for the cleanup of a failure: removing a directory needs one, and
  // the failure may be the open-file limit (while the graveyard keeps the registrations of
  // closed shm partitions, and so their descriptors, for the grace period).
  FdReserve reserve(2);
  std::vector<Status> errors(count);
  std::vector<uint8_t> created(count, 0);  // 1: the directory did not exist before this call
  // Workers write entries of their own index only.
  InPool(count, [&](size_t at) {
    const PartitionRef& r = which[at];
    std::error_code ec;
    const bool there =
        std::filesystem::exists(Partition::DirFor(options_, r.topic->name, PartitionId(r.index)), ec);
    created[at] = there || ec ? 0 : 1;
    auto p = OpenPartition(*r.topic, PartitionId(r.index));
    if (!p.ok()) {
      errors[at] = p.status();
      return false;
    }
    (*opened)[at] = std::move(*p);
    return true;
  });
  const auto first_error =
      std::find_if(errors.begin(), errors.end(), [](const Status& s) { return !s.ok(); });
  if (first_error == errors.end()) return Status::Ok();
  reserve.Release();
  for (size_t at = 0; at < count; ++at) {
    if (created[at] == 0 || errors[at].ok()) continue;
    const std::string dir = Partition::DirFor(options_, which[at].topic->name, PartitionId(which[at].index));
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (ec)
      RDMQ_LOG(kWarn, "broker", "could not remove a partition that failed to open")
          .kv("dir", dir)
          .kv("error", ec.message());
  }
  for (size_t at = 0; at < count; ++at) {
    if ((*opened)[at]) Close(*(*opened)[at], created[at] != 0);
  }
  opened->clear();
  return *first_error;
}

void TopicTable::Insert(Topic topic) {
  MutexLock lock(mu_);
  std::string name = topic.info.name;
  topics_[name] = std::move(topic);
}

void TopicTable::Extend(const metadata::TopicInfo& info, std::vector<std::shared_ptr<Partition>> added) {
  MutexLock lock(mu_);
  Topic& t = topics_[info.name];
  t.info = info;
  t.partitions.insert(t.partitions.end(), added.begin(), added.end());
}

std::optional<Topic> TopicTable::Get(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::shared_ptr<Partition>> TopicTable::Remove(const std::string& name) {
  MutexLock lock(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return {};
  std::vector<std::shared_ptr<Partition>> parts;
  for (auto& p : it->second.partitions) {
    if (p) parts.push_back(std::move(p));
  }
  topics_.erase(it);
  return parts;
}

std::vector<std::shared_ptr<Partition>> TopicTable::RemoveAll() {
  std::map<std::string, Topic> topics;
  {
    MutexLock lock(mu_);
    topics.swap(topics_);
  }
  std::vector<std::shared_ptr<Partition>> parts;
  for (auto& [name, t] : topics) {
    for (auto& p : t.partitions) {
      if (p) parts.push_back(std::move(p));
    }
  }
  return parts;
}

std::vector<std::shared_ptr<Partition>> TopicTable::AllPartitions() const {
  MutexLock lock(mu_);
  std::vector<std::shared_ptr<Partition>> parts;
  for (const auto& [name, t] : topics_) {
    for (const auto& p : t.partitions) {
      if (p) parts.push_back(p);
    }
  }
  return parts;
}

size_t TopicTable::topic_count() const {
  MutexLock lock(mu_);
  return topics_.size();
}

size_t TopicTable::partition_count() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const auto& [name, t] : topics_) {
    for (const auto& p : t.partitions) n += p ? 1 : 0;
  }
  return n;
}

Result<std::shared_ptr<Partition>> TopicTable::Find(const std::string& topic, PartitionId partition) const {
  UniqueLock lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) {
    lock.Unlock();
    if (cluster_has_ && cluster_has_(topic)) {
      return Status(WireError::kNotLeader, "this broker holds no replica of " + topic + "-" +
                                               std::to_string(partition.value()) +
                                               " (DescribeTopic says which broker leads it)");
    }
    return Status(WireError::kUnknownTopic, "unknown topic '" + topic + "'");
  }
  const auto& parts = it->second.partitions;
  if (partition.value() < 0 || static_cast<size_t>(partition.value()) >= parts.size()) {
    return Status(WireError::kUnknownPartition, "topic '" + topic + "' has " + std::to_string(parts.size()) +
                                                    " partitions; there is no partition " +
                                                    std::to_string(partition.value()));
  }
  const std::shared_ptr<Partition>& p = parts[static_cast<size_t>(partition.value())];
  if (!p) {
    return Status(WireError::kNotLeader, "this broker holds no replica of " + topic + "-" +
                                             std::to_string(partition.value()) +
                                             " (DescribeTopic says which broker leads it)");
  }
  if (!p->serving()) {
    const int32_t leader = p->leader();
    return Status(WireError::kNotLeader,
                  "this broker does not lead " + p->where() +
                      (leader >= 0 ? " (broker " + std::to_string(leader) + " does)" : " (no leader now)"));
  }
  return p;
}

std::shared_ptr<Partition> TopicTable::FindReplica(const std::string& topic, PartitionId partition) const {
  MutexLock lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end() || partition.value() < 0 ||
      static_cast<size_t>(partition.value()) >= it->second.partitions.size()) {
    return nullptr;
  }
  return it->second.partitions[static_cast<size_t>(partition.value())];
}

void TopicTable::Place(const metadata::TopicInfo& info, PartitionId index, std::shared_ptr<Partition> p) {
  MutexLock lock(mu_);
  Topic& t = topics_[info.name];
  t.info = info;
  const auto count = static_cast<size_t>(std::max(info.config.partitions, index.value() + 1));
  if (t.partitions.size() < count) t.partitions.resize(count);
  t.partitions[static_cast<size_t>(index.value())] = std::move(p);
}

std::shared_ptr<Partition> TopicTable::Take(const std::string& topic, PartitionId index) {
  MutexLock lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end() || index.value() < 0 ||
      static_cast<size_t>(index.value()) >= it->second.partitions.size()) {
    return nullptr;
  }
  std::shared_ptr<Partition> p = std::move(it->second.partitions[static_cast<size_t>(index.value())]);
  if (std::none_of(it->second.partitions.begin(), it->second.partitions.end(),
                   [](const auto& x) { return x; })) {
    topics_.erase(it);
  }
  return p;
}

std::vector<std::string> TopicTable::TopicNames() const {
  MutexLock lock(mu_);
  std::vector<std::string> out;
  out.reserve(topics_.size());
  for (const auto& [name, t] : topics_) out.push_back(name);
  return out;
}

void TopicTable::Close(Partition& p, bool remove_files, std::optional<WireError> why) {
  MutexLock lock(p.mu);
  if (p.deleted()) return;
  for (const auto& l : p.Leases()) {
    leases_.EndLocked(p, l, why.value_or(remove_files ? WireError::kUnknownTopic : WireError::kUnavailable),
                      true);
  }
  p.CloseLog();
  // Wake consumers sleeping on the slot: they see the closed flag.
  publisher_.Publish(p);
  const bool keep = remove_files && !stopping_.load();
  Buried b = p.MarkDeleted(keep);
  if (keep) {
    b.drop_after_ns = MonoNanos() + kRetiredGraceNs;
    MutexLock g(graveyard_mu_);
    graveyard_.push_back(std::move(b));
  }
  if (remove_files) p.RemoveFiles();
}

void TopicTable::EndLeases(Partition& p, WireError why) {
  MutexLock lock(p.mu);
  if (p.deleted()) return;
  for (const auto& l : p.Leases()) leases_.EndLocked(p, l, why, true);
}

void TopicTable::DropBuried(uint64_t now_ns) {
  std::vector<Buried> drop;  // deregistered outside the lock
  MutexLock g(graveyard_mu_);
  for (auto it = graveyard_.begin(); it != graveyard_.end();) {
    if (it->drop_after_ns <= now_ns) {
      drop.push_back(std::move(*it));
      it = graveyard_.erase(it);
    } else {
      ++it;
    }
  }
}

void TopicTable::ClearBuried() {
  MutexLock g(graveyard_mu_);
  graveyard_.clear();
}

}  // namespace rdmq::broker::internal
