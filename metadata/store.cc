#include "rdmq/metadata/store.h"

#include <cassert>

#include "metadata/journal.h"
#include "metadata/store_json.h"
#include "metadata/store_state.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"

namespace rdmq::metadata {
namespace {

constexpr int64_t kProducerIdBlock = 1000;

internal::JournalFiles FilesOf(const StoreOptions& o) {
  return {o.dir, "metadata.wal", "metadata.json", o.checkpoint_every, o.sync};
}

}  // namespace

MetadataStore::MetadataStore(StoreOptions options)
    : options_(std::move(options)),
      state_(new internal::StoreState),
      journal_(new internal::Journal(FilesOf(options_))) {}

MetadataStore::~MetadataStore() = default;

Result<std::unique_ptr<MetadataStore>> MetadataStore::Open(const StoreOptions& options) {
  if (options.dir.empty()) return Status(Errc::kInvalidArgument, "metadata store needs a directory");
  std::unique_ptr<MetadataStore> store(new MetadataStore(options));
  RDMQ_RETURN_IF_ERROR(store->Load());
  return store;
}

Status MetadataStore::Load() {
  MutexLock lock(mu_);
  uint64_t replayed = 0;
  // The journal calls these while Load holds mu_ (the analysis does not look into lambdas).
  const auto load = [&](std::string_view text, const std::string& path) -> Result<uint64_t> {
    mu_.AssertHeld();
    RDMQ_RETURN_IF_ERROR(internal::DecodeCheckpoint(text, path, state_.get()));
    return state_->seq;
  };
  const auto apply = [&](std::string_view payload, const std::string& log, uint64_t seq) -> Status {
    mu_.AssertHeld();
    RDMQ_ASSIGN_OR_RETURN(internal::Mutation op, internal::DecodeMutation(payload, log, seq));
    RDMQ_RETURN_IF_ERROR(state_->Apply(op).WithContext(log + " record " + std::to_string(seq)));
    state_->seq = seq;
    ++replayed;
    return Status::Ok();
  };
  RDMQ_RETURN_IF_ERROR(journal_->Open(load, apply));
  state_->next_producer_id = state_->producer_id_limit;  // skip whatever the last run may have used
  RDMQ_LOG(kInfo, "metadata", "metadata store opened")
      .kv("dir", options_.dir)
      .kv("topics", state_->topics.size())
      .kv("users", state_->users.size())
      .kv("acls", state_->acls.size())
      .kv("seq", state_->seq)
      .kv("replayed", replayed);
  return Status::Ok();
}

Status MetadataStore::Commit(const internal::Mutation& op) {
  RDMQ_ASSIGN_OR_RETURN(const uint64_t seq, journal_->Append(internal::EncodeMutation(op)));
  // Live mutations go through the same Apply as replay, so a restart rebuilds exactly this state.
  Status applied = state_->Apply(op);
  assert(applied.ok());
  (void)applied;
  state_->seq = seq;
  if (journal_->checkpoint_due()) {
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

Status MetadataStore::PutTopic(const TopicInfo& info) {
  RDMQ_RETURN_IF_ERROR(ValidateTopicName(info.name));
  RDMQ_RETURN_IF_ERROR(ValidateConfig(info.config));
  MutexLock lock(mu_);
  return Commit(internal::Mutation::CreateTopic(info));
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

Status MetadataStore::CreateUser(const UserInfo& user) {
  RDMQ_RETURN_IF_ERROR(ValidateUser(user));
  MutexLock lock(mu_);
  if (state_->users.count(user.name) != 0) {
    return Status(MetadataErrc::kUserExists, "user '" + user.name + "' already exists");
  }
  return Commit(internal::Mutation::PutUser(user));
}

Status MetadataStore::UpdateUser(const UserInfo& user) {
  RDMQ_RETURN_IF_ERROR(ValidateUser(user));
  MutexLock lock(mu_);
  if (state_->users.count(user.name) == 0) {
    return Status(MetadataErrc::kNoSuchUser, "no user '" + user.name + "'");
  }
  return Commit(internal::Mutation::PutUser(user));
}

Status MetadataStore::DeleteUser(const std::string& name) {
  RDMQ_RETURN_IF_ERROR(ValidateUserName(name));
  MutexLock lock(mu_);
  if (state_->users.count(name) == 0) return Status(MetadataErrc::kNoSuchUser, "no user '" + name + "'");
  return Commit(internal::Mutation::DeleteUser(name));
}

std::optional<UserInfo> MetadataStore::GetUser(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = state_->users.find(name);
  if (it == state_->users.end()) return std::nullopt;
  return it->second;
}

std::vector<UserInfo> MetadataStore::ListUsers() const {
  MutexLock lock(mu_);
  std::vector<UserInfo> out;
  out.reserve(state_->users.size());
  for (const auto& [name, u] : state_->users) out.push_back(u);
  return out;
}

Result<bool> MetadataStore::AddAcl(const AclBinding& b) {
  RDMQ_RETURN_IF_ERROR(ValidateAcl(b));
  MutexLock lock(mu_);
  if (state_->acls.count(b) != 0) return false;
  RDMQ_RETURN_IF_ERROR(Commit(internal::Mutation::PutAcl(b)));
  return true;
}

Result<bool> MetadataStore::RemoveAcl(const AclBinding& b) {
  RDMQ_RETURN_IF_ERROR(ValidateAcl(b));
  MutexLock lock(mu_);
  if (state_->acls.count(b) == 0) return false;
  RDMQ_RETURN_IF_ERROR(Commit(internal::Mutation::DeleteAcl(b)));
  return true;
}

std::vector<AclBinding> MetadataStore::ListAcls() const {
  MutexLock lock(mu_);
  return {state_->acls.begin(), state_->acls.end()};
}

Status MetadataStore::Checkpoint() {
  MutexLock lock(mu_);
  return CheckpointLocked();
}

Status MetadataStore::CheckpointLocked() {
  return journal_->WriteCheckpoint(internal::EncodeCheckpoint(*state_));
}

uint64_t MetadataStore::last_seq() const {
  MutexLock lock(mu_);
  return state_->seq;
}

}  // namespace rdmq::metadata
