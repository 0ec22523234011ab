#include "rdmq/metadata/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <filesystem>

#include "metadata/store_json.h"
#include "metadata/store_state.h"
#include "metadata/wal.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"

namespace rdmq::metadata {
namespace {

constexpr int64_t kProducerIdBlock = 1000;
const char* const kWalName = "metadata.wal";
const char* const kCheckpointName = "metadata.json";

Status WriteAll(int fd, const void* data, size_t n, const std::string& what) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "write " + what);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open directory " + dir);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status::FromErrno(err, "fsync directory " + dir);
  return Status::Ok();
}

}  // namespace

MetadataStore::MetadataStore(StoreOptions options)
    : options_(std::move(options)), state_(new internal::StoreState) {}

MetadataStore::~MetadataStore() {
  if (wal_fd_ >= 0) ::close(wal_fd_);
}

Result<std::unique_ptr<MetadataStore>> MetadataStore::Open(const StoreOptions& options) {
  if (options.dir.empty()) return Status(Errc::kInvalidArgument, "metadata store needs a directory");
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) return Status(ec, "create metadata directory " + options.dir);
  std::unique_ptr<MetadataStore> store(new MetadataStore(options));
  RDMQ_RETURN_IF_ERROR(store->Load());
  return store;
}

Status MetadataStore::Load() {
  MutexLock lock(mu_);
  const std::string ckpt_path = options_.dir + "/" + kCheckpointName;
  const std::string wal_path = options_.dir + "/" + kWalName;

  if (std::filesystem::exists(ckpt_path)) {
    RDMQ_ASSIGN_OR_RETURN(std::string text, wal::ReadWholeFile(ckpt_path));
    RDMQ_RETURN_IF_ERROR(internal::DecodeCheckpoint(text, ckpt_path, state_.get()));
  }

  // Replay the log; validate everything before truncating a torn tail.
  RDMQ_ASSIGN_OR_RETURN(wal::ReplayResult replay, wal::Replay(wal_path));
  uint64_t applied = 0;
  for (const auto& rec : replay.records) {
    if (rec.seq <= state_->seq) continue;  // already in the checkpoint
    if (rec.seq != state_->seq + 1) {
      return Status(MetadataErrc::kCorruptLog, wal_path + ": record sequence " + std::to_string(rec.seq) +
                                                   " follows " + std::to_string(state_->seq));
    }
    RDMQ_ASSIGN_OR_RETURN(internal::Mutation op, internal::DecodeMutation(rec.payload, wal_path, rec.seq));
    RDMQ_RETURN_IF_ERROR(state_->Apply(op).WithContext(wal_path + " record " + std::to_string(rec.seq)));
    state_->seq = rec.seq;
    ++applied;
  }
  state_->next_producer_id = state_->producer_id_limit;  // skip whatever the last run may have used

  RDMQ_ASSIGN_OR_RETURN(wal_fd_, wal::OpenForAppend(wal_path, replay.valid_bytes));
  if (replay.valid_bytes != replay.file_bytes) {
    RDMQ_LOG(kWarn, "metadata", "cut torn tail of metadata log")
        .kv("file", wal_path)
        .kv("valid_bytes", replay.valid_bytes)
        .kv("file_bytes", replay.file_bytes);
  }
  since_checkpoint_ = static_cast<uint32_t>(applied);
  RDMQ_LOG(kInfo, "metadata", "metadata store opened")
      .kv("dir", options_.dir)
      .kv("topics", state_->topics.size())
      .kv("seq", state_->seq)
      .kv("replayed", applied);
  return Status::Ok();
}

Status MetadataStore::Commit(const internal::Mutation& op) {
  const uint64_t seq = state_->seq + 1;
  const std::string rec = wal::EncodeRecord(seq, internal::EncodeMutation(op));
  RDMQ_RETURN_IF_ERROR(WriteAll(wal_fd_, rec.data(), rec.size(), options_.dir + "/" + kWalName));
  if (options_.sync && ::fdatasync(wal_fd_) != 0) {
    return Status::FromErrno(errno, "fdatasync " + options_.dir + "/" + kWalName);
  }
  // Live mutations go through the same Apply as replay, so a restart rebuilds exactly this state.
  Status applied = state_->Apply(op);
  assert(applied.ok());
  (void)applied;
  state_->seq = seq;
  if (++since_checkpoint_ >= options_.checkpoint_every) {
    // A failed checkpoint leaves the log intact, so nothing is lost; report and go on.
    Status s = CheckpointLocked();
    if (!s.ok()) RDMQ_LOG(kWarn, "metadata", "checkpoint failed").kv("error", s);
  }
  return Status::Ok();
}

Result<TopicInfo> MetadataStore::CreateTopic(const std::string& name, const TopicConfig& config) {
  RDMQ_RETURN_IF_ERROR(ValidateTopicName(name));
  RDMQ_RETURN_IF_ERROR(ValidateConfig(config));
  MutexLock lock(mu_);
  if (state_->topics.count(name) != 0) return Status(MetadataErrc::kTopicExists, name);
  TopicInfo t{name, state_->next_topic_id, config, WallMillis().value()};
  RDMQ_RETURN_IF_ERROR(Commit(internal::Mutation::CreateTopic(t)));
  return t;
}

Status MetadataStore::DeleteTopic(const std::string& name) {
  MutexLock lock(mu_);
  if (state_->topics.count(name) == 0) return Status(MetadataErrc::kNoSuchTopic, name);
  return Commit(internal::Mutation::DeleteTopic(name));
}

Result<TopicInfo> MetadataStore::AlterTopic(const std::string& name, const TopicConfig& config) {
  RDMQ_RETURN_IF_ERROR(ValidateConfig(config));
  MutexLock lock(mu_);
  auto it = state_->topics.find(name);
  if (it == state_->topics.end()) return Status(MetadataErrc::kNoSuchTopic, name);
  if (config.partitions < it->second.config.partitions) {
    return Status(MetadataErrc::kBadConfig, name + ": partitions can grow, not shrink (now " +
                                                std::to_string(it->second.config.partitions) + ")");
  }
  TopicInfo t = it->second;
  t.config = config;
  RDMQ_RETURN_IF_ERROR(Commit(internal::Mutation::AlterTopic(t)));
  return t;
}

Result<TopicInfo> MetadataStore::GetTopic(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = state_->topics.find(name);
  if (it == state_->topics.end()) return Status(MetadataErrc::kNoSuchTopic, name);
  return it->second;
}

std::optional<TopicInfo> MetadataStore::FindTopicById(TopicId id) const {
  MutexLock lock(mu_);
  for (const auto& [name, t] : state_->topics) {
    if (t.id == id) return t;
  }
  return std::nullopt;
}

std::vector<TopicInfo> MetadataStore::ListTopics() const {
  MutexLock lock(mu_);
  std::vector<TopicInfo> out;
  out.reserve(state_->topics.size());
  for (const auto& [name, t] : state_->topics) out.push_back(t);
  return out;
}

Result<ProducerId> MetadataStore::AllocateProducerId() {
  MutexLock lock(mu_);
  if (state_->next_producer_id >= state_->producer_id_limit) {
    RDMQ_RETURN_IF_ERROR(
        Commit(internal::Mutation::ProducerIdBlock(state_->producer_id_limit + kProducerIdBlock)));
  }
  return state_->next_producer_id++;
}

Status MetadataStore::Checkpoint() {
  MutexLock lock(mu_);
  return CheckpointLocked();
}

Status MetadataStore::CheckpointLocked() {
  const std::string path = options_.dir + "/" + kCheckpointName;
  const std::string tmp = path + ".tmp";
  const std::string text = internal::EncodeCheckpoint(*state_);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + tmp);
  Status s = WriteAll(fd, text.data(), text.size(), tmp);
  if (s.ok() && ::fsync(fd) != 0) s = Status::FromErrno(errno, "fsync " + tmp);
  ::close(fd);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::FromErrno(errno, "rename " + tmp + " to " + path);
  RDMQ_RETURN_IF_ERROR(SyncDir(options_.dir));
  // The checkpoint now covers every logged record; records left behind by a crash before this
  // truncation are skipped on replay by their sequence numbers.
  if (::ftruncate(wal_fd_, 0) != 0)
    return Status::FromErrno(errno, "truncate " + options_.dir + "/" + kWalName);
  if (::lseek(wal_fd_, 0, SEEK_SET) < 0) return Status::FromErrno(errno, "seek metadata log");
  since_checkpoint_ = 0;
  return Status::Ok();
}

uint64_t MetadataStore::last_seq() const {
  MutexLock lock(mu_);
  return state_->seq;
}

}  // namespace rdmq::metadata
