// Where a cluster's metadata lives in ZooKeeper, under the configured root (docs/replication.md,
// "ZooKeeper layout"):
//
//   <root>/brokers/ids/<id>                          ephemeral: BrokerInfo
//   <root>/controller                                ephemeral: the controller's id and epoch
//   <root>/controller_epoch                          the epoch, its version the fencing token
//   <root>/topics/<name>                             TopicAssignment
//   <root>/topics/<name>/partitions/<p>/state        PartitionState (compare-and-set)
//   <root>/topic_id                                  the last topic id handed out (compare-and-set)
//   <root>/producer_id_block                         the last producer id block's end (compare-and-set)
//   <root>/groups/<escaped group>/<topic>            a group's committed offsets of a topic (group_offsets.h)
//   <root>/users/<escaped name>                      a SASL user and its secrets (security_records.h)
//   <root>/acls                                      every ACL binding, one list (security_records.h)
#pragma once

#include <string>

#include "rdmq/coord/zk.h"

namespace rdmq::cluster::internal {

struct Layout {
  std::string root;  // "/rdmq"

  std::string brokers() const { return root + "/brokers/ids"; }
  std::string broker(int32_t id) const { return brokers() + "/" + std::to_string(id); }
  std::string controller() const { return root + "/controller"; }
  std::string controller_epoch() const { return root + "/controller_epoch"; }
  std::string topics() const { return root + "/topics"; }
  std::string topic(const std::string& name) const { return topics() + "/" + name; }
  std::string partitions(const std::string& name) const { return topic(name) + "/partitions"; }
  std::string partition(const std::string& name, int32_t p) const {
    return partitions(name) + "/" + std::to_string(p);
  }
  std::string state(const std::string& name, int32_t p) const { return partition(name, p) + "/state"; }
  std::string topic_id() const { return root + "/topic_id"; }
  std::string producer_id_block() const { return root + "/producer_id_block"; }
  std::string groups() const { return root + "/groups"; }
  std::string group(const std::string& escaped) const { return groups() + "/" + escaped; }
  std::string users() const { return root + "/users"; }
  std::string user(const std::string& escaped) const { return users() + "/" + escaped; }
  std::string acls() const { return root + "/acls"; }
};

}  // namespace rdmq::cluster::internal
