// "redis": Redis Streams through hiredis. Partition p is the stream key "<topic>-<p>".
// Producers pipeline XADD commands on one connection: commands are appended to hiredis's output
// buffer and written when `batch_size` bytes are buffered or the driver polls; replies come back
// in order, so the tags wait in a FIFO. Consumers read with XREAD BLOCK over their partitions'
// streams, up to 4096 entries per stream per call. The durability is the server's
// (appendonly / appendfsync), which Setup reads back for the report.
#include <hiredis/hiredis.h>
#include <poll.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <thread>

#include "rdmq/bench/system.h"
#include "rdmq/common/clock.h"

namespace rdmq::bench {
namespace {

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextDeleter>;
struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

Status ContextError(const redisContext* c, const std::string& what) {
  return Status(Errc::kUnavailable, "redis: " + what + ": " + (c != nullptr ? c->errstr : "out of memory"));
}

Result<Context> Connect(const std::string& address) {
  std::string host = "127.0.0.1";
  int port = 6379;
  if (!address.empty()) {
    const size_t colon = address.rfind(':');
    host = address.substr(0, colon);
    if (colon != std::string::npos) port = std::atoi(address.c_str() + colon + 1);
    if (port <= 0 || port > 65535) {
      return Status(Errc::kInvalidArgument, "redis address '" + address + "' is not host:port");
    }
  }
  const timeval tv{5, 0};
  Context c(redisConnectWithTimeout(host.c_str(), port, tv));
  if (!c || c->err) return ContextError(c.get(), "connect to " + host + ":" + std::to_string(port));
  return c;
}

// Runs one command synchronously; error replies become errors.
Result<Reply> Command(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  Reply r(
      static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(args.size()), argv.data(), lens.data())));
  if (!r) return ContextError(c, args[0]);
  if (r->type == REDIS_REPLY_ERROR) return Status(Errc::kInternal, "redis: " + args[0] + ": " + r->str);
  return r;
}

std::string StreamKey(const Workload& w, int p) { return w.topic + "-" + std::to_string(p); }

// A field of INFO or CONFIG GET output.
std::string InfoField(const std::string& info, const std::string& key) {
  const size_t at = info.find(key + ":");
  if (at == std::string::npos) return "";
  const size_t end = info.find_first_of("\r\n", at);
  return info.substr(at + key.size() + 1, end - at - key.size() - 1);
}

class RedisProducer final : public ProducerClient {
 public:
  RedisProducer(Context c, const Workload& w, AckSink* sink)
      : c_(std::move(c)), sink_(sink), batch_(w.batch_size) {
    for (int p = 0; p < w.partitions; ++p) keys_.push_back(StreamKey(w, p));
  }

  Status Send(int partition, std::span<const std::byte> payload, uint64_t tag) override {
    if (partition < 0 || partition >= static_cast<int>(keys_.size())) {
      return Status(Errc::kInvalidArgument, "redis: no stream for partition " + std::to_string(partition));
    }
    const std::string& key = keys_[static_cast<size_t>(partition)];
    const char* argv[] = {"XADD", key.c_str(), "*", "d", reinterpret_cast<const char*>(payload.data())};
    const size_t lens[] = {4, key.size(), 1, 1, payload.size()};
    if (redisAppendCommandArgv(c_.get(), 5, argv, lens) != REDIS_OK) return ContextError(c_.get(), "XADD");
    tags_.push_back(tag);
    buffered_ += payload.size() + key.size() + 32;
    if (buffered_ >= batch_) RDMQ_RETURN_IF_ERROR(WriteOut());
    return Status::Ok();
  }

  Status Poll(std::chrono::microseconds timeout) override {
    RDMQ_RETURN_IF_ERROR(WriteOut());
    RDMQ_ASSIGN_OR_RETURN(size_t n, Deliver());
    if (n != 0 || tags_.empty()) return Status::Ok();
    pollfd pfd{c_->fd, POLLIN, 0};
    const int ms = static_cast<int>((timeout.count() + 999) / 1000);  // 0: just look
    if (::poll(&pfd, 1, ms) > 0) {
      if (redisBufferRead(c_.get()) != REDIS_OK) return ContextError(c_.get(), "read XADD replies");
      return Deliver().status();
    }
    return Status::Ok();
  }

  Status Flush(std::chrono::milliseconds timeout) override {
    const uint64_t deadline = MonoNanos() + static_cast<uint64_t>(std::chrono::nanoseconds(timeout).count());
    while (!tags_.empty()) {
      RDMQ_RETURN_IF_ERROR(Poll(std::chrono::milliseconds(10)));
      if (MonoNanos() > deadline) {
        return Status(Errc::kTimeout,
                      "redis: " + std::to_string(tags_.size()) + " XADD replies still missing");
      }
    }
    return Status::Ok();
  }

 private:
  Status WriteOut() {
    int done = 0;
    while (!done) {
      if (redisBufferWrite(c_.get(), &done) != REDIS_OK) return ContextError(c_.get(), "write XADD commands");
    }
    buffered_ = 0;
    return Status::Ok();
  }

  // Hands every reply already read to the sink.
  Result<size_t> Deliver() {
    size_t n = 0;
    for (;;) {
      void* raw = nullptr;
      if (redisGetReplyFromReader(c_.get(), &raw) != REDIS_OK)
        return ContextError(c_.get(), "parse XADD reply");
      if (raw == nullptr) return n;
      Reply r(static_cast<redisReply*>(raw));
      if (tags_.empty()) return Status(Errc::kInternal, "redis: a reply nobody asked for");
      const uint64_t tag = tags_.front();
      tags_.pop_front();
      if (r->type == REDIS_REPLY_ERROR) {
        sink_->OnAck(tag, Status(Errc::kInternal, std::string("redis: XADD: ") + r->str));
      } else {
        sink_->OnAck(tag, Status::Ok());
      }
      ++n;
    }
  }

  Context c_;
  AckSink* sink_;
  size_t batch_;
  size_t buffered_ = 0;
  std::vector<std::string> keys_;
  std::deque<uint64_t> tags_;
};

class RedisConsumer final : public ConsumerClient {
 public:
  RedisConsumer(Context c, const Workload& w, const std::vector<int>& partitions, RecordSink* sink)
      : c_(std::move(c)), partitions_(partitions), sink_(sink) {
    for (int p : partitions) {
      keys_.push_back(StreamKey(w, p));
      ids_.push_back("0-0");
    }
  }

  Status Poll(std::chrono::milliseconds timeout) override {
    if (partitions_.empty()) {
      std::this_thread::sleep_for(timeout);
      return Status::Ok();
    }
    std::vector<std::string> args = {
        "XREAD", "COUNT", "4096", "BLOCK", std::to_string(std::max<int64_t>(1, timeout.count())), "STREAMS"};
    args.insert(args.end(), keys_.begin(), keys_.end());
    args.insert(args.end(), ids_.begin(), ids_.end());
    RDMQ_ASSIGN_OR_RETURN(Reply r, Command(c_.get(), args));
    if (r->type == REDIS_REPLY_NIL) return Status::Ok();  // timed out
    if (r->type != REDIS_REPLY_ARRAY)
      return Status(Errc::kCorruption, "redis: XREAD returned neither array nor nil");
    for (size_t s = 0; s < r->elements; ++s) {
      const redisReply* stream = r->element[s];
      if (stream->type != REDIS_REPLY_ARRAY || stream->elements != 2) {
        return Status(Errc::kCorruption, "redis: XREAD stream entry is not [key, entries]");
      }
      const std::string key(stream->element[0]->str, stream->element[0]->len);
      const auto it = std::find(keys_.begin(), keys_.end(), key);
      if (it == keys_.end())
        return Status(Errc::kCorruption, "redis: XREAD returned unrequested stream " + key);
      const size_t idx = static_cast<size_t>(it - keys_.begin());
      const redisReply* entries = stream->element[1];
      views_.clear();
      for (size_t e = 0; e < entries->elements; ++e) {
        const redisReply* entry = entries->element[e];  // [id, [field, value, ...]]
        if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2 || entry->element[1]->elements < 2) {
          return Status(Errc::kCorruption, "redis: XREAD entry is not [id, [field, value]]");
        }
        const redisReply* value = entry->element[1]->element[1];
        views_.emplace_back(reinterpret_cast<const std::byte*>(value->str), value->len);
        if (e + 1 == entries->elements) ids_[idx].assign(entry->element[0]->str, entry->element[0]->len);
      }
      if (!views_.empty()) sink_->OnRecords(partitions_[idx], views_);
    }
    return Status::Ok();
  }

 private:
  Context c_;
  std::vector<int> partitions_;
  RecordSink* sink_;
  std::vector<std::string> keys_, ids_;
  std::vector<std::span<const std::byte>> views_;
};

class RedisSystem final : public System {
 public:
  explicit RedisSystem(const Workload& w) : w_(w) {}

  std::string Describe() const override {
    return description_.empty() ? "redis (not connected)" : description_;
  }
  int ServerPid() const override { return pid_; }

  Status Setup() override {
    RDMQ_ASSIGN_OR_RETURN(Context c, Connect(w_.address));
    RDMQ_ASSIGN_OR_RETURN(Reply info, Command(c.get(), {"INFO", "server"}));
    const std::string text(info->str, info->len);
    pid_ = std::atoi(InfoField(text, "process_id").c_str());
    std::string aof = "?", fsync = "?";
    RDMQ_ASSIGN_OR_RETURN(Reply a, Command(c.get(), {"CONFIG", "GET", "appendonly"}));
    if (a->type == REDIS_REPLY_ARRAY && a->elements == 2) aof = a->element[1]->str;
    RDMQ_ASSIGN_OR_RETURN(Reply f, Command(c.get(), {"CONFIG", "GET", "appendfsync"}));
    if (f->type == REDIS_REPLY_ARRAY && f->elements == 2) fsync = f->element[1]->str;
    description_ = "redis " + InfoField(text, "redis_version") + " streams, appendonly " + aof +
                   ", appendfsync " + fsync;
    std::vector<std::string> del = {"DEL"};
    for (int p = 0; p < w_.partitions; ++p) del.push_back(StreamKey(w_, p));
    RDMQ_ASSIGN_OR_RETURN(Reply d, Command(c.get(), del));
    return Status::Ok();
  }

  Result<std::unique_ptr<ProducerClient>> OpenProducer(int, AckSink* sink) override {
    RDMQ_ASSIGN_OR_RETURN(Context c, Connect(w_.address));
    return std::unique_ptr<ProducerClient>(std::make_unique<RedisProducer>(std::move(c), w_, sink));
  }

  Result<std::unique_ptr<ConsumerClient>> OpenConsumer(int, const std::vector<int>& partitions,
                                                       RecordSink* sink) override {
    RDMQ_ASSIGN_OR_RETURN(Context c, Connect(w_.address));
    return std::unique_ptr<ConsumerClient>(
        std::make_unique<RedisConsumer>(std::move(c), w_, partitions, sink));
  }

  Status Cleanup() override {
    // Deleting the streams frees the server's memory for the next run; the AOF keeps the
    // deletions, and its file is the run's data directory's business.
    RDMQ_ASSIGN_OR_RETURN(Context c, Connect(w_.address));
    std::vector<std::string> del = {"DEL"};
    for (int p = 0; p < w_.partitions; ++p) del.push_back(StreamKey(w_, p));
    return Command(c.get(), del).status();
  }

 private:
  Workload w_;
  std::string description_;
  int pid_ = 0;
};

}  // namespace

std::unique_ptr<System> MakeRedisSystem(const Workload& workload) {
  return std::make_unique<RedisSystem>(workload);
}

}  // namespace rdmq::bench
