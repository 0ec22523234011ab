#include "rdmq/metadata/offsets.h"

#include "metadata/journal.h"
#include "metadata/offsets_json.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"

namespace rdmq::metadata {

using internal::OffsetMutation;

Status ValidateGroupId(std::string_view group) {
  if (group.empty() || group.size() > kMaxGroupIdBytes) {
    return Status(MetadataErrc::kBadGroupId,
                  "a group id has 1 to " + std::to_string(kMaxGroupIdBytes) + " bytes");
  }
  for (const char c : group) {
    if (c < 0x21 || c > 0x7e) {
      return Status(MetadataErrc::kBadGroupId, "a group id is printable ASCII without spaces");
    }
  }
  return Status::Ok();
}

OffsetStore::OffsetStore(StoreOptions options)
    : options_(std::move(options)),
      state_(new internal::OffsetState),
      journal_(new internal::Journal(
          {options_.dir, "offsets.wal", "offsets.json", options_.checkpoint_every, options_.sync})) {}

OffsetStore::~OffsetStore() = default;

Result<std::unique_ptr<OffsetStore>> OffsetStore::Open(const StoreOptions& options) {
  if (options.dir.empty()) return Status(Errc::kInvalidArgument, "the offset store needs a directory");
  std::unique_ptr<OffsetStore> store(new OffsetStore(options));
  RDMQ_RETURN_IF_ERROR(store->Load());
  return store;
}

Status OffsetStore::Load() {
  MutexLock lock(mu_);
  // The journal calls these while Load holds mu_ (the analysis does not look into lambdas).
  const auto load = [&](std::string_view text, const std::string& path) -> Result<uint64_t> {
    mu_.AssertHeld();
    RDMQ_RETURN_IF_ERROR(internal::DecodeOffsetCheckpoint(text, path, state_.get()));
    return state_->seq;
  };
  const auto apply = [&](std::string_view payload, const std::string& log, uint64_t seq) -> Status {
    mu_.AssertHeld();
    RDMQ_ASSIGN_OR_RETURN(OffsetMutation m, internal::DecodeOffsetMutation(payload, log, seq));
    state_->Apply(m);
    state_->seq = seq;
    return Status::Ok();
  };
  RDMQ_RETURN_IF_ERROR(journal_->Open(load, apply));
  RDMQ_LOG(kInfo, "metadata", "offset store opened")
      .kv("dir", options_.dir)
      .kv("groups", state_->groups.size())
      .kv("seq", state_->seq);
  return Status::Ok();
}

Status OffsetStore::Log(const std::string& payload) {
  RDMQ_ASSIGN_OR_RETURN(state_->seq, journal_->Append(payload));
  return Status::Ok();
}

Status OffsetStore::Commit(const std::string& group, const GroupOffsets& offsets) {
  RDMQ_RETURN_IF_ERROR(ValidateGroupId(group));
  for (const auto& [key, c] : offsets) {
    const std::string what = key.first + "/" + std::to_string(key.second);
    if (key.second < 0 || c.offset < 0) {
      return Status(Errc::kInvalidArgument, what + ": partition and offset must not be negative");
    }
    if (c.metadata.size() > kMaxOffsetMetadata) {
      return Status(Errc::kInvalidArgument,
                    what + ": offset metadata is over " + std::to_string(kMaxOffsetMetadata) + " bytes");
    }
  }
  if (offsets.empty()) return Status::Ok();
  OffsetMutation m{OffsetMutation::Op::kCommit, group, offsets};
  MutexLock lock(mu_);
  RDMQ_RETURN_IF_ERROR(Log(internal::EncodeOffsetMutation(m)));
  state_->Apply(m);
  if (journal_->checkpoint_due()) {
    // A failed checkpoint leaves the log intact; report and go on.
    Status s = journal_->WriteCheckpoint(internal::EncodeOffsetCheckpoint(*state_));
    if (!s.ok()) RDMQ_LOG(kWarn, "metadata", "offset checkpoint failed").kv("error", s);
  }
  return Status::Ok();
}

std::optional<CommittedOffset> OffsetStore::Fetch(const std::string& group, const std::string& topic,
                                                  int32_t partition) const {
  MutexLock lock(mu_);
  const auto g = state_->groups.find(group);
  if (g == state_->groups.end()) return std::nullopt;
  const auto it = g->second.find({topic, partition});
  if (it == g->second.end()) return std::nullopt;
  return it->second;
}

GroupOffsets OffsetStore::FetchGroup(const std::string& group) const {
  MutexLock lock(mu_);
  const auto g = state_->groups.find(group);
  return g == state_->groups.end() ? GroupOffsets{} : g->second;
}

std::vector<std::string> OffsetStore::Groups() const {
  MutexLock lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, offsets] : state_->groups) out.push_back(name);
  return out;
}

Status OffsetStore::DeleteGroup(const std::string& group) {
  MutexLock lock(mu_);
  if (state_->groups.count(group) == 0) return Status(MetadataErrc::kNoSuchGroup, group);
  OffsetMutation m{OffsetMutation::Op::kDeleteGroup, group, {}};
  RDMQ_RETURN_IF_ERROR(Log(internal::EncodeOffsetMutation(m)));
  state_->Apply(m);
  return Status::Ok();
}

Status OffsetStore::DeleteTopic(const std::string& topic) {
  MutexLock lock(mu_);
  bool any = false;
  for (const auto& [name, g] : state_->groups) {
    const auto it = g.lower_bound({topic, 0});
    any = any || (it != g.end() && it->first.first == topic);
  }
  if (!any) return Status::Ok();
  OffsetMutation m{OffsetMutation::Op::kDeleteTopic, topic, {}};
  RDMQ_RETURN_IF_ERROR(Log(internal::EncodeOffsetMutation(m)));
  state_->Apply(m);
  return Status::Ok();
}

Status OffsetStore::Checkpoint() {
  MutexLock lock(mu_);
  return journal_->WriteCheckpoint(internal::EncodeOffsetCheckpoint(*state_));
}

}  // namespace rdmq::metadata
