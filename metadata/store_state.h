// Internal: the metadata store's state and the mutations its log records, as typed values. The
// store (store.cc) logs each mutation (encoded by store_json.h) and then applies it with
// StoreState::Apply, the same function replay uses, so a restart rebuilds exactly the state the
// store had. Not thread-safe: MetadataStore guards it with its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "rdmq/common/status.h"
#include "rdmq/common/types.h"
#include "rdmq/metadata/acl.h"
#include "rdmq/metadata/topic.h"
#include "rdmq/metadata/user.h"

namespace rdmq::metadata::internal {

// One record of metadata.wal.
struct Mutation {
  enum class Op : uint8_t {
    kCreateTopic,
    kAlterTopic,
    kDeleteTopic,
    kProducerIdBlock,
    kPutUser,
    kDeleteUser,
    kPutAcl,
    kDeleteAcl,
  };
  Op op = Op::kCreateTopic;
  TopicInfo topic;      // kCreateTopic, kAlterTopic: the whole topic after the change
  std::string name;     // kDeleteTopic, kDeleteUser
  ProducerId limit{0};  // kProducerIdBlock: every producer id below it is reserved
  UserInfo user;        // kPutUser: the whole user after the change (a new one, or new secrets)
  AclBinding acl;       // kPutAcl, kDeleteAcl

  static Mutation CreateTopic(TopicInfo t) { return {Op::kCreateTopic, std::move(t), {}, {}, {}, {}}; }
  static Mutation AlterTopic(TopicInfo t) { return {Op::kAlterTopic, std::move(t), {}, {}, {}, {}}; }
  static Mutation DeleteTopic(std::string n) { return {Op::kDeleteTopic, {}, std::move(n), {}, {}, {}}; }
  static Mutation ProducerIdBlock(ProducerId l) { return {Op::kProducerIdBlock, {}, {}, l, {}, {}}; }
  static Mutation PutUser(UserInfo u) { return {Op::kPutUser, {}, {}, {}, std::move(u), {}}; }
  static Mutation DeleteUser(std::string n) { return {Op::kDeleteUser, {}, std::move(n), {}, {}, {}}; }
  static Mutation PutAcl(AclBinding b) { return {Op::kPutAcl, {}, {}, {}, {}, std::move(b)}; }
  static Mutation DeleteAcl(AclBinding b) { return {Op::kDeleteAcl, {}, {}, {}, {}, std::move(b)}; }
};

struct StoreState {
  uint64_t seq = 0;  // sequence number of the last applied mutation
  TopicId next_topic_id{1};
  ProducerId next_producer_id{0};   // next id to hand out
  ProducerId producer_id_limit{0};  // ids below this are reserved in the log
  std::map<std::string, TopicInfo> topics;
  std::map<std::string, UserInfo> users;
  std::set<AclBinding> acls;

  // Applies one mutation (not `seq`, which the caller sets). kCorruptLog when it does not fit
  // the state (an alter of an unknown topic). A put_user creates or replaces the user; deleting
  // an unknown topic or user changes nothing (as replaying a delete twice would).
  Status Apply(const Mutation& m);
};

}  // namespace rdmq::metadata::internal
