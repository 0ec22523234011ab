// "nats": NATS JetStream through the cnats C client. Partition p is the stream "<topic>_<p>"
// (file storage, one replica) capturing the subject "<topic>.<p>".
// Producers publish asynchronously (js_PublishAsync) with up to `window` publishes awaiting
// their JetStream ack; the library's ack handler, on its own thread, reports each ack (the tag
// is read back from the payload). Small windows send each message at once (SendAsap) for
// latency; larger ones let the library's flusher coalesce writes.
// Consumers use one ordered push consumer per partition (ephemeral, no acks, flow control), the
// fastest in-order reader the client offers; messages arrive on the subscription's thread.
#include <nats/nats.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "rdmq/bench/system.h"

namespace rdmq::bench {
namespace {

Status NatsError(natsStatus s, const std::string& what, jsErrCode code = static_cast<jsErrCode>(0)) {
  std::string text = natsStatus_GetText(s);
  natsStatus last = NATS_OK;
  if (const char* detail = nats_GetLastError(&last); detail != nullptr && *detail != '\0') {
    text += std::string(" (") + detail + ")";
  }
  if (code != 0) text += " [jetstream error " + std::to_string(static_cast<int>(code)) + "]";
  const Errc e = s == NATS_NO_SERVER || s == NATS_CONNECTION_CLOSED || s == NATS_CONNECTION_DISCONNECTED
                     ? Errc::kUnavailable
                 : s == NATS_TIMEOUT ? Errc::kTimeout
                                     : Errc::kInternal;
  return Status(e, "nats: " + what + ": " + text);
}

Status OpenLibrary() {
  // Once per process: in the fork mode every worker process opens its own copy.
  static const natsStatus s = nats_Open(-1);
  if (s != NATS_OK) return NatsError(s, "nats_Open");
  return Status::Ok();
}

std::string Url(const Workload& w) { return w.address.empty() ? "nats://127.0.0.1:4222" : w.address; }
std::string StreamName(const Workload& w, int p) { return w.topic + "_" + std::to_string(p); }
std::string Subject(const Workload& w, int p) { return w.topic + "." + std::to_string(p); }

// A connection and its JetStream context, destroyed in the right order.
class Connection {
 public:
  Connection() = default;
  ~Connection() {
    if (js_ != nullptr) jsCtx_Destroy(js_);
    if (nc_ != nullptr) natsConnection_Destroy(nc_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Status Open(const Workload& w, bool send_asap, jsOptions* js_options) {
    RDMQ_RETURN_IF_ERROR(OpenLibrary());
    natsOptions* opts = nullptr;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = natsOptions_SetURL(opts, Url(w).c_str());
    if (s == NATS_OK) s = natsOptions_SetSendAsap(opts, send_asap);
    if (s == NATS_OK) s = natsOptions_SetMaxPendingMsgs(opts, 1 << 20);
    if (s == NATS_OK) s = natsConnection_Connect(&nc_, opts);
    natsOptions_Destroy(opts);
    if (s != NATS_OK) return NatsError(s, "connect to " + Url(w));
    s = natsConnection_JetStream(&js_, nc_, js_options);
    if (s != NATS_OK) return NatsError(s, "JetStream context on " + Url(w));
    return Status::Ok();
  }
  natsConnection* nc() const { return nc_; }
  jsCtx* js() const { return js_; }

 private:
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
};

class NatsProducer final : public ProducerClient {
 public:
  NatsProducer(const Workload& w, AckSink* sink) : w_(w), sink_(sink) {
    for (int p = 0; p < w.partitions; ++p) subjects_.push_back(Subject(w, p));
  }

  Status Open() {
    jsOptions o;
    jsOptions_Init(&o);
    o.PublishAsync.MaxPending = w_.window;
    o.PublishAsync.AckHandler = &NatsProducer::OnAck;
    o.PublishAsync.AckHandlerClosure = this;
    return conn_.Open(w_, /*send_asap=*/w_.window <= 4, &o);
  }

  Status Send(int partition, std::span<const std::byte> payload, uint64_t) override {
    if (partition < 0 || partition >= static_cast<int>(subjects_.size())) {
      return Status(Errc::kInvalidArgument, "nats: no stream for partition " + std::to_string(partition));
    }
    const natsStatus s = js_PublishAsync(conn_.js(), subjects_[static_cast<size_t>(partition)].c_str(),
                                         payload.data(), static_cast<int>(payload.size()), nullptr);
    if (s != NATS_OK) return NatsError(s, "publish to " + subjects_[static_cast<size_t>(partition)]);
    return Status::Ok();
  }

  Status Poll(std::chrono::microseconds timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return acks_ != seen_; });
    seen_ = acks_;
    return Status::Ok();
  }

  Status Flush(std::chrono::milliseconds timeout) override {
    jsPubOptions o;
    jsPubOptions_Init(&o);
    o.MaxWait = timeout.count();
    const natsStatus s = js_PublishAsyncComplete(conn_.js(), &o);
    if (s != NATS_OK) return NatsError(s, "wait for publish acks");
    return Status::Ok();
  }

 private:
  static void OnAck(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
    auto* self = static_cast<NatsProducer*>(closure);
    const auto* data = reinterpret_cast<const std::byte*>(natsMsg_GetData(msg));
    const uint64_t tag = PayloadTag({data, static_cast<size_t>(natsMsg_GetDataLength(msg))});
    Status st;
    if (pa == nullptr) {
      st = pae != nullptr
               ? NatsError(pae->Err, std::string("publish ack: ") + (pae->ErrText ? pae->ErrText : ""),
                           pae->ErrCode)
               : Status(Errc::kInternal, "nats: publish ack with neither ack nor error");
    }
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->sink_->OnAck(tag, st);
      ++self->acks_;
    }
    self->cv_.notify_one();
    natsMsg_Destroy(msg);
  }

  Workload w_;
  AckSink* sink_;
  std::vector<std::string> subjects_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t acks_ = 0;  // guarded by mu_
  uint64_t seen_ = 0;
  Connection conn_;  // last: destroyed first, so no ack handler runs into freed members
};

class NatsConsumer final : public ConsumerClient {
 public:
  NatsConsumer(const Workload& w, const std::vector<int>& partitions, RecordSink* sink)
      : w_(w), partitions_(partitions), sink_(sink) {}
  ~NatsConsumer() override {
    for (natsSubscription* sub : subs_) {
      natsSubscription_Unsubscribe(sub);
      natsSubscription_Destroy(sub);
    }
  }

  Status Open() {
    RDMQ_RETURN_IF_ERROR(conn_.Open(w_, /*send_asap=*/true, nullptr));
    closures_.reserve(partitions_.size());
    streams_.reserve(partitions_.size());
    for (int p : partitions_) {
      closures_.push_back({this, p});
      // Kept for the subscription's life: an ordered consumer recreates its JetStream consumer
      // after a gap or a missed heartbeat.
      streams_.push_back(StreamName(w_, p));
      const std::string& stream = streams_.back();
      jsSubOptions so;
      jsSubOptions_Init(&so);
      so.Stream = stream.c_str();
      so.Ordered = true;
      natsSubscription* sub = nullptr;
      jsErrCode code{};
      const natsStatus s = js_Subscribe(&sub, conn_.js(), Subject(w_, p).c_str(), &NatsConsumer::OnMessage,
                                        &closures_.back(), nullptr, &so, &code);
      if (s != NATS_OK) return NatsError(s, "ordered consumer on stream " + stream, code);
      subs_.push_back(sub);
      natsSubscription_SetPendingLimits(sub, -1, -1);  // never drop: the library queue may grow
    }
    return Status::Ok();
  }

  Status Poll(std::chrono::milliseconds timeout) override {
    // Messages arrive on the subscriptions' threads; the driver only needs to wait.
    std::this_thread::sleep_for(std::min(timeout, std::chrono::milliseconds(5)));
    if (natsConnection_IsClosed(conn_.nc())) return Status(Errc::kUnavailable, "nats: connection closed");
    return Status::Ok();
  }

 private:
  struct Closure {
    NatsConsumer* self;
    int partition;
  };

  static void OnMessage(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
    auto* c = static_cast<Closure*>(closure);
    const std::span<const std::byte> view(reinterpret_cast<const std::byte*>(natsMsg_GetData(msg)),
                                          static_cast<size_t>(natsMsg_GetDataLength(msg)));
    {
      std::lock_guard<std::mutex> lock(c->self->mu_);  // one sink call at a time across partitions
      c->self->sink_->OnRecords(c->partition, {&view, 1});
    }
    natsMsg_Destroy(msg);
  }

  Workload w_;
  std::vector<int> partitions_;
  RecordSink* sink_;
  std::mutex mu_;
  std::vector<Closure> closures_;
  std::vector<std::string> streams_;
  Connection conn_;
  std::vector<natsSubscription*> subs_;  // destroyed (in the destructor body) before conn_
};

class NatsSystem final : public System {
 public:
  explicit NatsSystem(const Workload& w) : w_(w) {}

  std::string Describe() const override {
    return description_.empty() ? "nats (not connected)" : description_;
  }

  Status Setup() override {
    Connection c;
    RDMQ_RETURN_IF_ERROR(c.Open(w_, true, nullptr));
    char url[256] = {};
    natsConnection_GetConnectedUrl(c.nc(), url, sizeof(url));
    description_ =
        std::string("nats JetStream at ") + url + ", file storage, 1 replica, ordered push consumers";
    for (int p = 0; p < w_.partitions; ++p) {
      const std::string name = StreamName(w_, p), subject = Subject(w_, p);
      jsErrCode code{};
      natsStatus s = js_DeleteStream(c.js(), name.c_str(), nullptr, &code);
      if (s != NATS_OK && code != JSStreamNotFoundErr && s != NATS_NOT_FOUND) {
        return NatsError(s, "delete stream " + name, code);
      }
      jsStreamConfig cfg;
      jsStreamConfig_Init(&cfg);
      cfg.Name = name.c_str();
      const char* subjects[] = {subject.c_str()};
      cfg.Subjects = subjects;
      cfg.SubjectsLen = 1;
      cfg.Storage = js_FileStorage;
      cfg.Replicas = 1;
      jsStreamInfo* info = nullptr;
      s = js_AddStream(&info, c.js(), &cfg, nullptr, &code);
      if (info != nullptr) jsStreamInfo_Destroy(info);
      if (s != NATS_OK) return NatsError(s, "create stream " + name, code);
    }
    return Status::Ok();
  }

  Result<std::unique_ptr<ProducerClient>> OpenProducer(int, AckSink* sink) override {
    auto p = std::make_unique<NatsProducer>(w_, sink);
    RDMQ_RETURN_IF_ERROR(p->Open());
    return std::unique_ptr<ProducerClient>(std::move(p));
  }

  Result<std::unique_ptr<ConsumerClient>> OpenConsumer(int, const std::vector<int>& partitions,
                                                       RecordSink* sink) override {
    auto c = std::make_unique<NatsConsumer>(w_, partitions, sink);
    RDMQ_RETURN_IF_ERROR(c->Open());
    return std::unique_ptr<ConsumerClient>(std::move(c));
  }

  Status Cleanup() override {
    Connection c;
    RDMQ_RETURN_IF_ERROR(c.Open(w_, true, nullptr));
    for (int p = 0; p < w_.partitions; ++p) {
      jsErrCode code{};
      const natsStatus s = js_DeleteStream(c.js(), StreamName(w_, p).c_str(), nullptr, &code);
      if (s != NATS_OK) return NatsError(s, "delete stream " + StreamName(w_, p), code);
    }
    return Status::Ok();
  }

 private:
  Workload w_;
  std::string description_;
};

}  // namespace

std::unique_ptr<System> MakeNatsSystem(const Workload& workload) {
  return std::make_unique<NatsSystem>(workload);
}

}  // namespace rdmq::bench
