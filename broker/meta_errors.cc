#include "meta_errors.h"

#include <string>

#include "rdmq/metadata/topic.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::broker::internal {

Status MetadataToWire(const Status& s) {
  using metadata::MetadataErrc;
  using protocol::WireError;
  if (s.ok()) return s;
  std::string msg(s.context());
  if (msg.empty()) msg = s.code().message();
  if (s.is(MetadataErrc::kBadTopicName)) return Status(WireError::kInvalidTopicName, msg);
  if (s.is(MetadataErrc::kBadConfig) || s.is(MetadataErrc::kUnknownConfig)) {
    return Status(WireError::kInvalidConfig, msg);
  }
  if (s.is(MetadataErrc::kTopicExists)) return Status(WireError::kTopicExists, msg);
  if (s.is(MetadataErrc::kNoSuchTopic)) return Status(WireError::kUnknownTopic, msg);
  if (s.is(MetadataErrc::kBadUser)) return Status(WireError::kInvalidUser, msg);
  if (s.is(MetadataErrc::kUserExists)) return Status(WireError::kUserExists, msg);
  if (s.is(MetadataErrc::kNoSuchUser)) return Status(WireError::kUnknownUser, msg);
  if (s.is(MetadataErrc::kBadAcl)) return Status(WireError::kInvalidAcl, msg);
  return Status(WireError::kStorageError, "metadata store: " + s.ToString());
}

}  // namespace rdmq::broker::internal
