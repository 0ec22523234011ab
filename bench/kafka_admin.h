// librdkafka helpers of the "kafka" backend (system_kafka.cc): a configuration that collects
// properties with clear errors, and topic administration through librdkafka's admin API.
//
//   KafkaConf conf;
//   RDMQ_RETURN_IF_ERROR(conf.SetAll({{"bootstrap.servers", addr}, {"acks", "all"}}));
//   RDMQ_RETURN_IF_ERROR(conf.SetKeyValues(w.producer_settings, "--producer-set"));
//   RDMQ_ASSIGN_OR_RETURN(rd_kafka_t* rk, conf.Create(RD_KAFKA_PRODUCER));   // rk is the caller's
//   RDMQ_RETURN_IF_ERROR(RecreateTopic(addr, "bench", 4, {{"durability", "durable"}}));
//
// Errors: kInvalidArgument for a property librdkafka rejects (naming it and librdkafka's reason),
// kUnavailable when the broker cannot be reached, kTimeout when the topic does not appear in
// the metadata in time, kInternal with the broker's error otherwise.
// Threading: each call is self-contained; a KafkaConf is used by one thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <string>
#include <utility>
#include <vector>

#include "rdmq/common/status.h"

namespace rdmq::bench {

class KafkaConf {
 public:
  KafkaConf() : conf_(rd_kafka_conf_new()) {}
  ~KafkaConf() {
    if (conf_ != nullptr) rd_kafka_conf_destroy(conf_);
  }
  KafkaConf(const KafkaConf&) = delete;
  KafkaConf& operator=(const KafkaConf&) = delete;

  Status Set(const std::string& key, const std::string& value, const std::string& origin = "");
  Status SetAll(const std::vector<std::pair<std::string, std::string>>& kv);
  // "key=value" strings, as --producer-set / --consumer-set give them (`option` names them).
  Status SetKeyValues(const std::vector<std::string>& kv, const std::string& option);
  // Creates a client from this configuration, which it takes over (the KafkaConf is spent).
  Result<rd_kafka_t*> Create(rd_kafka_type_t type);
  rd_kafka_conf_t* get() { return conf_; }

 private:
  rd_kafka_conf_t* conf_;
};

// Deletes `topic` if it exists, creates it with `partitions` partitions of `replicas` replicas
// and the given topic configs, and waits until the broker's metadata shows every partition.
Status RecreateTopic(const std::string& bootstrap, const std::string& topic, int partitions, int replicas,
                     const std::vector<std::pair<std::string, std::string>>& configs);
// Deletes `topic`; a topic that does not exist is fine.
Status DeleteTopic(const std::string& bootstrap, const std::string& topic);

}  // namespace rdmq::bench
