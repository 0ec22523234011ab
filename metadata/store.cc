#include "rdmq/metadata/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "metadata/wal.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"

namespace rdmq::metadata {
namespace {

constexpr int kCheckpointFormat = 1;
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

struct MetadataStore::State {
  uint64_t seq = 0;
  uint64_t next_topic_id = 1;
  int64_t next_producer_id = 0;   // next id to hand out
  int64_t producer_id_limit = 0;  // ids below this are reserved in the log
  std::map<std::string, TopicInfo> topics;

  nlohmann::json ToJson() const {
    nlohmann::json ts = nlohmann::json::array();
    for (const auto& [name, t] : topics) ts.push_back(metadata::ToJson(t));
    return {{"format", kCheckpointFormat},
            {"seq", seq},
            {"next_topic_id", next_topic_id},
            {"producer_id_limit", producer_id_limit},
            {"topics", std::move(ts)}};
  }

  // Applies one logged mutation. Errors mean the record is not a valid mutation.
  Status Apply(const nlohmann::json& op) {
    const auto kind = op.find("op");
    if (!op.is_object() || kind == op.end() || !kind->is_string())
      return Status(MetadataErrc::kCorruptLog, "no op");
    const std::string k = kind->get<std::string>();
    if (k == "create_topic" || k == "alter_topic") {
      const auto t = op.find("topic");
      if (t == op.end()) return Status(MetadataErrc::kCorruptLog, k + " without topic");
      RDMQ_ASSIGN_OR_RETURN(TopicInfo info, TopicInfoFromJson(*t));
      if (k == "create_topic") {
        if (info.id.value() >= next_topic_id) next_topic_id = info.id.value() + 1;
      } else if (topics.find(info.name) == topics.end()) {
        return Status(MetadataErrc::kCorruptLog, "alter of unknown topic " + info.name);
      }
      topics[info.name] = std::move(info);
      return Status::Ok();
    }
    if (k == "delete_topic") {
      const auto n = op.find("name");
      if (n == op.end() || !n->is_string())
        return Status(MetadataErrc::kCorruptLog, "delete_topic without name");
      topics.erase(n->get<std::string>());
      return Status::Ok();
    }
    if (k == "producer_id_block") {
      const auto lim = op.find("limit");
      if (lim == op.end() || !lim->is_number_integer()) {
        return Status(MetadataErrc::kCorruptLog, "producer_id_block without limit");
      }
      producer_id_limit = std::max(producer_id_limit, lim->get<int64_t>());
      return Status::Ok();
    }
    return Status(MetadataErrc::kCorruptLog, "unknown op '" + k + "'");
  }

  Status FromCheckpoint(const nlohmann::json& j) {
    const auto bad = [](const std::string& why) { return Status(MetadataErrc::kCorruptCheckpoint, why); };
    if (!j.is_object()) return bad("not a JSON object");
    const auto fmt = j.find("format");
    if (fmt == j.end() || !fmt->is_number_integer() || fmt->get<int>() != kCheckpointFormat) {
      return bad("unsupported format (want " + std::to_string(kCheckpointFormat) + ")");
    }
    const auto s = j.find("seq");
    const auto nt = j.find("next_topic_id");
    const auto pl = j.find("producer_id_limit");
    const auto ts = j.find("topics");
    if (s == j.end() || !s->is_number_unsigned() || nt == j.end() || !nt->is_number_unsigned() ||
        pl == j.end() || !pl->is_number_integer() || ts == j.end() || !ts->is_array()) {
      return bad("missing or mistyped seq, next_topic_id, producer_id_limit or topics");
    }
    seq = s->get<uint64_t>();
    next_topic_id = nt->get<uint64_t>();
    producer_id_limit = pl->get<int64_t>();
    for (const auto& t : *ts) {
      auto info = TopicInfoFromJson(t);
      if (!info.ok()) return bad(info.status().ToString());
      topics[info->name] = std::move(*info);
    }
    return Status::Ok();
  }
};

MetadataStore::MetadataStore(StoreOptions options) : options_(std::move(options)), state_(new State) {}

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
  std::lock_guard<std::mutex> lock(mu_);
  const std::string ckpt_path = options_.dir + "/" + kCheckpointName;
  const std::string wal_path = options_.dir + "/" + kWalName;

  if (std::filesystem::exists(ckpt_path)) {
    RDMQ_ASSIGN_OR_RETURN(std::string text, wal::ReadWholeFile(ckpt_path));
    auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Status(MetadataErrc::kCorruptCheckpoint, ckpt_path + ": not valid JSON");
    RDMQ_RETURN_IF_ERROR(state_->FromCheckpoint(j).WithContext(ckpt_path));
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
    auto op = nlohmann::json::parse(rec.payload, nullptr, false);
    if (op.is_discarded()) {
      return Status(MetadataErrc::kCorruptLog,
                    wal_path + ": record " + std::to_string(rec.seq) + " is not JSON");
    }
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

Status MetadataStore::Commit(const nlohmann::json& op) {
  const uint64_t seq = state_->seq + 1;
  const std::string rec = wal::EncodeRecord(seq, op.dump());
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
  std::lock_guard<std::mutex> lock(mu_);
  if (state_->topics.count(name) != 0) return Status(MetadataErrc::kTopicExists, name);
  TopicInfo t{name, TopicId(state_->next_topic_id), config, WallMillis().value()};
  RDMQ_RETURN_IF_ERROR(Commit({{"op", "create_topic"}, {"topic", ToJson(t)}}));
  return t;
}

Status MetadataStore::DeleteTopic(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_->topics.count(name) == 0) return Status(MetadataErrc::kNoSuchTopic, name);
  return Commit({{"op", "delete_topic"}, {"name", name}});
}

Result<TopicInfo> MetadataStore::AlterTopic(const std::string& name, const TopicConfig& config) {
  RDMQ_RETURN_IF_ERROR(ValidateConfig(config));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = state_->topics.find(name);
  if (it == state_->topics.end()) return Status(MetadataErrc::kNoSuchTopic, name);
  if (config.partitions < it->second.config.partitions) {
    return Status(MetadataErrc::kBadConfig, name + ": partitions can grow, not shrink (now " +
                                                std::to_string(it->second.config.partitions) + ")");
  }
  TopicInfo t = it->second;
  t.config = config;
  RDMQ_RETURN_IF_ERROR(Commit({{"op", "alter_topic"}, {"topic", ToJson(t)}}));
  return t;
}

Result<TopicInfo> MetadataStore::GetTopic(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = state_->topics.find(name);
  if (it == state_->topics.end()) return Status(MetadataErrc::kNoSuchTopic, name);
  return it->second;
}

std::optional<TopicInfo> MetadataStore::FindTopicById(TopicId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, t] : state_->topics) {
    if (t.id == id) return t;
  }
  return std::nullopt;
}

std::vector<TopicInfo> MetadataStore::ListTopics() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TopicInfo> out;
  out.reserve(state_->topics.size());
  for (const auto& [name, t] : state_->topics) out.push_back(t);
  return out;
}

Result<ProducerId> MetadataStore::AllocateProducerId() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_->next_producer_id >= state_->producer_id_limit) {
    const int64_t limit = state_->producer_id_limit + kProducerIdBlock;
    RDMQ_RETURN_IF_ERROR(Commit({{"op", "producer_id_block"}, {"limit", limit}}));
  }
  return ProducerId(state_->next_producer_id++);
}

Status MetadataStore::Checkpoint() {
  std::lock_guard<std::mutex> lock(mu_);
  return CheckpointLocked();
}

Status MetadataStore::CheckpointLocked() {
  const std::string path = options_.dir + "/" + kCheckpointName;
  const std::string tmp = path + ".tmp";
  const std::string text = state_->ToJson().dump(2) + "\n";
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
  std::lock_guard<std::mutex> lock(mu_);
  return state_->seq;
}

}  // namespace rdmq::metadata
