#include "metadata/store_state.h"

#include <algorithm>

namespace rdmq::metadata::internal {

Status StoreState::Apply(const Mutation& m) {
  switch (m.op) {
    case Mutation::Op::kCreateTopic:
      if (m.topic.id >= next_topic_id) next_topic_id = m.topic.id + 1;
      topics[m.topic.name] = m.topic;
      return Status::Ok();
    case Mutation::Op::kAlterTopic:
      if (topics.find(m.topic.name) == topics.end()) {
        return Status(MetadataErrc::kCorruptLog, "alter of unknown topic " + m.topic.name);
      }
      topics[m.topic.name] = m.topic;
      return Status::Ok();
    case Mutation::Op::kDeleteTopic:
      topics.erase(m.name);
      return Status::Ok();
    case Mutation::Op::kProducerIdBlock:
      producer_id_limit = std::max(producer_id_limit, m.limit);
      return Status::Ok();
    case Mutation::Op::kPutUser:
      users[m.user.name] = m.user;
      return Status::Ok();
    case Mutation::Op::kDeleteUser:
      users.erase(m.name);
      return Status::Ok();
    case Mutation::Op::kPutAcl:
      acls.insert(m.acl);
      return Status::Ok();
    case Mutation::Op::kDeleteAcl:
      acls.erase(m.acl);
      return Status::Ok();
  }
  return Status(MetadataErrc::kCorruptLog, "unknown mutation");
}

}  // namespace rdmq::metadata::internal
