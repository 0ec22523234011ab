#include "kafka_admin.h"

#include <chrono>
#include <memory>
#include <thread>

#include "rdmq/common/clock.h"

namespace rdmq::bench {

using namespace std::chrono_literals;

Status KafkaConf::Set(const std::string& key, const std::string& value, const std::string& origin) {
  char err[512] = {};
  if (rd_kafka_conf_set(conf_, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
    return Status(Errc::kInvalidArgument,
                  "kafka: " + (origin.empty() ? "" : origin + " ") + key + "=" + value + ": " + err);
  }
  return Status::Ok();
}

Status KafkaConf::SetAll(const std::vector<std::pair<std::string, std::string>>& kv) {
  for (const auto& [k, v] : kv) RDMQ_RETURN_IF_ERROR(Set(k, v));
  return Status::Ok();
}

Status KafkaConf::SetKeyValues(const std::vector<std::string>& kv, const std::string& option) {
  for (const std::string& s : kv) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::string what = option;
      what += " '" + s + "' is not key=value";
      return Status(Errc::kInvalidArgument, what);
    }
    RDMQ_RETURN_IF_ERROR(Set(s.substr(0, eq), s.substr(eq + 1), option));
  }
  return Status::Ok();
}

Result<rd_kafka_t*> KafkaConf::Create(rd_kafka_type_t type) {
  char err[512] = {};
  rd_kafka_t* rk = rd_kafka_new(type, conf_, err, sizeof err);
  if (rk == nullptr) return Status(Errc::kInvalidArgument, std::string("kafka: create the client: ") + err);
  conf_ = nullptr;  // rd_kafka_new owns it now
  return rk;
}

namespace {

struct RkDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
struct QueueDeleter {
  void operator()(rd_kafka_queue_t* q) const { rd_kafka_queue_destroy(q); }
};
struct EventDeleter {
  void operator()(rd_kafka_event_t* e) const { rd_kafka_event_destroy(e); }
};
struct OptionsDeleter {
  void operator()(rd_kafka_AdminOptions_t* o) const { rd_kafka_AdminOptions_destroy(o); }
};
using Event = std::unique_ptr<rd_kafka_event_t, EventDeleter>;

constexpr int kTimeoutMs = 30000;

// A client for the admin requests and the metadata, and the queue their results come back on.
class Admin {
 public:
  Status Open(const std::string& bootstrap) {
    KafkaConf conf;
    RDMQ_RETURN_IF_ERROR(conf.SetAll({{"bootstrap.servers", bootstrap},
                                      {"client.id", "rdmq-bench-admin"},
                                      {"allow.auto.create.topics", "false"}}));
    RDMQ_ASSIGN_OR_RETURN(rd_kafka_t * rk, conf.Create(RD_KAFKA_PRODUCER));
    rk_.reset(rk);
    q_.reset(rd_kafka_queue_new(rk));
    return Status::Ok();
  }

  // Runs one admin request (`start` issues it on the queue) and returns the topic's result code.
  template <typename Start, typename Topics>
  Result<rd_kafka_resp_err_t> Run(rd_kafka_admin_op_t op, const std::string& what, Start start,
                                  Topics topics) {
    std::unique_ptr<rd_kafka_AdminOptions_t, OptionsDeleter> opts(rd_kafka_AdminOptions_new(rk_.get(), op));
    char err[256] = {};
    (void)rd_kafka_AdminOptions_set_operation_timeout(opts.get(), kTimeoutMs, err, sizeof err);
    (void)rd_kafka_AdminOptions_set_request_timeout(opts.get(), kTimeoutMs, err, sizeof err);
    start(rk_.get(), opts.get(), q_.get());
    Event ev(rd_kafka_queue_poll(q_.get(), kTimeoutMs + 5000));
    if (!ev)
      return Status(Errc::kTimeout,
                    "kafka: " + what + ": no answer within " + std::to_string(kTimeoutMs / 1000) + " s");
    if (const rd_kafka_resp_err_t e = rd_kafka_event_error(ev.get()); e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      const Errc code = e == RD_KAFKA_RESP_ERR__TRANSPORT || e == RD_KAFKA_RESP_ERR__TIMED_OUT
                            ? Errc::kUnavailable
                            : Errc::kInternal;
      return Status(code, "kafka: " + what + ": " + rd_kafka_event_error_string(ev.get()));
    }
    size_t n = 0;
    const rd_kafka_topic_result_t** results = topics(ev.get(), &n);
    if (n != 1)
      return Status(Errc::kInternal, "kafka: " + what + ": " + std::to_string(n) + " topic results, not 1");
    last_message_ =
        rd_kafka_topic_result_error_string(results[0]) ? rd_kafka_topic_result_error_string(results[0]) : "";
    return rd_kafka_topic_result_error(results[0]);
  }

  Status Delete(const std::string& topic) {
    rd_kafka_DeleteTopic_t* del = rd_kafka_DeleteTopic_new(topic.c_str());
    auto r = Run(
        RD_KAFKA_ADMIN_OP_DELETETOPICS, "delete topic " + topic,
        [&](rd_kafka_t* rk, rd_kafka_AdminOptions_t* o, rd_kafka_queue_t* q) {
          rd_kafka_DeleteTopics(rk, &del, 1, o, q);
        },
        [](rd_kafka_event_t* e, size_t* n) {
          return rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(e), n);
        });
    rd_kafka_DeleteTopic_destroy(del);
    RDMQ_RETURN_IF_ERROR(r.status());
    if (*r != RD_KAFKA_RESP_ERR_NO_ERROR && *r != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
      return Status(Errc::kInternal,
                    "kafka: delete topic " + topic + ": " + rd_kafka_err2str(*r) + " " + last_message_);
    }
    return Status::Ok();
  }

  Result<rd_kafka_resp_err_t> Create(const std::string& topic, int partitions, int replicas,
                                     const std::vector<std::pair<std::string, std::string>>& configs) {
    char err[256] = {};
    rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(topic.c_str(), partitions, replicas, err, sizeof err);
    if (nt == nullptr) return Status(Errc::kInvalidArgument, "kafka: topic " + topic + ": " + err);
    for (const auto& [k, v] : configs) (void)rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
    auto r = Run(
        RD_KAFKA_ADMIN_OP_CREATETOPICS, "create topic " + topic,
        [&](rd_kafka_t* rk, rd_kafka_AdminOptions_t* o, rd_kafka_queue_t* q) {
          rd_kafka_CreateTopics(rk, &nt, 1, o, q);
        },
        [](rd_kafka_event_t* e, size_t* n) {
          return rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(e), n);
        });
    rd_kafka_NewTopic_destroy(nt);
    return r;
  }

  // The topic's partition count in the broker's metadata (-1: not there, or in error).
  Result<int> Partitions(const std::string& topic) {
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t e = rd_kafka_metadata(rk_.get(), 1, nullptr, &md, 5000);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Status(Errc::kUnavailable, std::string("kafka: metadata: ") + rd_kafka_err2str(e));
    }
    int count = -1;
    for (int i = 0; i < md->topic_cnt; ++i) {
      const rd_kafka_metadata_topic_t& t = md->topics[i];
      if (topic == t.topic && t.err == RD_KAFKA_RESP_ERR_NO_ERROR) count = t.partition_cnt;
    }
    rd_kafka_metadata_destroy(md);
    return count;
  }

  const std::string& last_message() const { return last_message_; }

 private:
  std::unique_ptr<rd_kafka_t, RkDeleter> rk_;
  std::unique_ptr<rd_kafka_queue_t, QueueDeleter> q_;  // destroyed before rk_
  std::string last_message_;
};

}  // namespace

Status RecreateTopic(const std::string& bootstrap, const std::string& topic, int partitions, int replicas,
                     const std::vector<std::pair<std::string, std::string>>& configs) {
  Admin admin;
  RDMQ_RETURN_IF_ERROR(admin.Open(bootstrap));
  RDMQ_RETURN_IF_ERROR(admin.Delete(topic));
  const uint64_t deadline = MonoNanos() + 20'000'000'000ULL;
  // A deletion may still be under way: "already exists" is retried until the deadline.
  for (;;) {
    RDMQ_ASSIGN_OR_RETURN(rd_kafka_resp_err_t e, admin.Create(topic, partitions, replicas, configs));
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
    if (e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS || MonoNanos() > deadline) {
      return Status(Errc::kInternal,
                    "kafka: create topic " + topic + ": " + rd_kafka_err2str(e) + " " + admin.last_message());
    }
    std::this_thread::sleep_for(100ms);
  }
  for (;;) {
    RDMQ_ASSIGN_OR_RETURN(int n, admin.Partitions(topic));
    if (n == partitions) return Status::Ok();
    if (MonoNanos() > deadline) {
      return Status(Errc::kTimeout, "kafka: topic " + topic + " has " + std::to_string(n) +
                                        " partitions in the metadata, not " + std::to_string(partitions));
    }
    std::this_thread::sleep_for(50ms);
  }
}

Status DeleteTopic(const std::string& bootstrap, const std::string& topic) {
  Admin admin;
  RDMQ_RETURN_IF_ERROR(admin.Open(bootstrap));
  return admin.Delete(topic);
}

}  // namespace rdmq::bench
