// Bad input on the Kafka port, sent over a raw socket: truncated frames, absurd sizes, unknown
// APIs and versions, malformed bodies, record batches with a wrong CRC, produces to partitions
// that do not exist. Each gets an error code or a closed connection; the broker keeps serving
// other connections; no stored byte changes.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/cli_fixture.h"
#include "rdmq/kafka/frame.h"
#include "rdmq/kafka/messages.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::test {
namespace {

using kafka::ApiKey;
using kafka::ErrorCode;

class Socket {
 public:
  explicit Socket(const std::string& hostport) {
    const size_t colon = hostport.rfind(':');
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(std::stoi(hostport.substr(colon + 1))));
    inet_pton(AF_INET, hostport.substr(0, colon).c_str(), &a.sin_addr);
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~Socket() { ::close(fd_); }
  void Send(const std::vector<std::byte>& b) {
    REQUIRE(::send(fd_, b.data(), b.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(b.size()));
  }
  // The next response frame (without its size prefix), or nullopt if the broker closed the
  // connection (or nothing came within the timeout).
  std::optional<std::vector<std::byte>> Receive(int timeout_ms = 10000) {
    std::byte size[4];
    if (!ReadExactly(size, 4, timeout_ms)) return std::nullopt;
    const int32_t n = static_cast<int32_t>(ntohl(*reinterpret_cast<uint32_t*>(size)));
    if (n < 0 || n > (64 << 20)) return std::nullopt;
    std::vector<std::byte> body(static_cast<size_t>(n));
    if (!ReadExactly(body.data(), body.size(), timeout_ms)) return std::nullopt;
    return body;
  }
  // True when the broker closed the connection (EOF) within the timeout.
  bool Closed(int timeout_ms = 10000) {
    std::byte b;
    return !ReadExactly(&b, 1, timeout_ms) && eof_;
  }

 private:
  bool ReadExactly(std::byte* p, size_t n, int timeout_ms) {
    size_t got = 0;
    while (got < n) {
      pollfd pf{fd_, POLLIN, 0};
      if (::poll(&pf, 1, timeout_ms) <= 0) return false;
      const ssize_t r = ::recv(fd_, p + got, n - got, 0);
      if (r <= 0) {
        eof_ = true;
        return false;
      }
      got += static_cast<size_t>(r);
    }
    return true;
  }
  int fd_ = -1;
  bool eof_ = false;
};

template <class Req>
std::vector<std::byte> Frame(ApiKey key, int16_t version, const Req& req, int32_t correlation = 7) {
  kafka::Writer w;
  w.ReserveSizePrefix();
  kafka::EncodeRequestHeader(
      w, {static_cast<int16_t>(key), version, correlation, std::string_view("bad-input")});
  kafka::Encode(w, version, req);
  REQUIRE_OK(w.FinishSizePrefix());
  return w.Flatten();
}

template <class Resp>
Resp Decode(ApiKey key, int16_t version, const std::vector<std::byte>& body) {
  kafka::Reader r(body);
  const int32_t correlation = r.Int32("correlation_id");
  CHECK(correlation == 7);
  if (kafka::ResponseHeaderVersion(key, version) >= 1) r.SkipTaggedFields("header");
  Resp out;
  REQUIRE_OK(kafka::Decode(r, version, &out));
  return out;
}

std::vector<std::byte> Raw(std::initializer_list<int> bytes) {
  std::vector<std::byte> v;
  for (int b : bytes) v.push_back(static_cast<std::byte>(b));
  return v;
}

// One produce request of a single batch of `n` records to topic/partition.
kafka::ProduceRequest OneBatch(const std::string& topic, int32_t partition, const std::string& batch) {
  kafka::ProduceRequest req;
  req.acks = -1;
  req.timeout_ms = 5000;
  kafka::ProducePartition p;
  p.index = partition;
  p.records = kafka::ByteSpan(reinterpret_cast<const std::byte*>(batch.data()), batch.size());
  req.topics.push_back({topic, {p}});
  return req;
}

std::string Batch(const std::string& value) {
  storage::RecordInput r;
  r.value = value;
  r.timestamp = TimestampMs(1700000000000);
  storage::BatchOptions o;
  o.base_offset = Offset(0);
  return storage::EncodeBatch(o, std::span(&r, 1));
}

// The broker still answers a fresh connection.
void StillServes(const Fixture& f) {
  Socket s(f.kafka());
  s.Send(Frame(ApiKey::kMetadata, 1, kafka::MetadataRequest{}));
  auto body = s.Receive();
  REQUIRE(body);
  auto md = Decode<kafka::MetadataResponse>(ApiKey::kMetadata, 1, *body);
  CHECK(md.brokers.size() == 1);
}

TEST_CASE("Kafka port: bad frames close that connection only, bad batches get error codes and store nothing",
          "[e2e][kafka][bad-input]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "t", "--partitions", "1"}), 0);
  REQUIRE_RUN(f.Kcat({"-P", "-t", "t"}, "one\ntwo\n"), 0);
  const std::string before = f.Kcat({"-C", "-t", "t", "-e", "-q", "-f", "%o %s\n"}).out;
  REQUIRE(before == "0 one\n1 two\n");
  // The segment files as `rdmq partition inspect --records` sees them, less the checkpoint the
  // housekeeper may write meanwhile (it records the same committed end).
  auto inspect = [&] {
    const RunResult r = f.Rdmq(
        {"partition", "inspect", "t", "0", "--data-dir", f.broker().data_dir(), "--records", "--json"});
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_discarded()) return r.out;
    std::function<void(nlohmann::json&)> strip = [&](nlohmann::json& v) {
      if (v.is_object()) {
        v.erase("checkpoint");
        for (auto& [k, x] : v.items()) strip(x);
      } else if (v.is_array()) {
        for (auto& x : v) strip(x);
      }
    };
    strip(j);
    return j.dump(1);
  };
  const std::string files_before = inspect();
  REQUIRE(Contains(files_before, "\"batches\""));

  SECTION("a frame cut short, then the client goes away") {
    Socket s(f.kafka());
    s.Send(Raw({0, 0, 0, 100, 0, 3, 0, 1}));
  }
  SECTION("a size prefix of 2 GiB closes the connection") {
    Socket s(f.kafka());
    s.Send(Raw({0x7f, 0xff, 0xff, 0xff, 0, 0}));
    CHECK(s.Closed());
  }
  SECTION("a negative size prefix closes the connection") {
    Socket s(f.kafka());
    s.Send(Raw({0xff, 0xff, 0xff, 0xfe}));
    CHECK(s.Closed());
  }
  SECTION("an unknown API key closes the connection") {
    Socket s(f.kafka());
    s.Send(Raw({0, 0, 0, 10, 0x03, 0xe7, 0, 0, 0, 0, 0, 7, 0xff, 0xff}));
    CHECK(s.Closed());
  }
  SECTION("an unsupported Metadata version closes the connection") {
    Socket s(f.kafka());
    auto frame = Frame(ApiKey::kMetadata, 1, kafka::MetadataRequest{});
    frame[7] = std::byte{99};  // version 99
    s.Send(frame);
    CHECK(s.Closed());
  }
  SECTION("ApiVersions of a future version is answered in v0 with UNSUPPORTED_VERSION and the table") {
    Socket s(f.kafka());
    // As a newer client sends it: a flexible header (v2) and a body this broker does not read.
    auto frame = Frame(ApiKey::kApiVersions, 3, kafka::ApiVersionsRequest{"future-client", "9.9"});
    frame[7] = std::byte{99};
    s.Send(frame);
    auto body = s.Receive();
    REQUIRE(body);
    auto av = Decode<kafka::ApiVersionsResponse>(ApiKey::kApiVersions, 0, *body);
    CHECK(av.error_code == ErrorCode::kUnsupportedVersion);
    CHECK(!av.api_keys.empty());
  }
  SECTION("a Produce body that does not decode closes the connection") {
    Socket s(f.kafka());
    auto frame = Frame(ApiKey::kProduce, 7, OneBatch("t", 0, Batch("x")));
    frame.resize(frame.size() - 30);
    const uint32_t n = htonl(static_cast<uint32_t>(frame.size() - 4));
    std::memcpy(frame.data(), &n, 4);
    s.Send(frame);
    CHECK(s.Closed());
  }
  SECTION("a batch with a wrong CRC is CORRUPT_MESSAGE; the connection stays") {
    Socket s(f.kafka());
    std::string bad = Batch("corrupt me");
    bad[bad.size() - 2] ^= 0x20;
    s.Send(Frame(ApiKey::kProduce, 7, OneBatch("t", 0, bad)));
    auto body = s.Receive();
    REQUIRE(body);
    auto pr = Decode<kafka::ProduceResponse>(ApiKey::kProduce, 7, *body);
    REQUIRE(pr.topics.size() == 1);
    CHECK(pr.topics[0].partitions[0].error_code == ErrorCode::kCorruptMessage);
    // The same connection serves the next request.
    s.Send(Frame(ApiKey::kProduce, 7, OneBatch("t", 5, Batch("nowhere"))));
    body = s.Receive();
    REQUIRE(body);
    pr = Decode<kafka::ProduceResponse>(ApiKey::kProduce, 7, *body);
    CHECK(pr.topics[0].partitions[0].error_code == ErrorCode::kUnknownTopicOrPartition);
    s.Send(Frame(ApiKey::kProduce, 7, OneBatch("no-such-topic", 0, Batch("nowhere"))));
    body = s.Receive();
    REQUIRE(body);
    pr = Decode<kafka::ProduceResponse>(ApiKey::kProduce, 7, *body);
    CHECK(pr.topics[0].partitions[0].error_code == ErrorCode::kUnknownTopicOrPartition);
  }
  SECTION("a batch cut inside its records is CORRUPT_MESSAGE") {
    Socket s(f.kafka());
    std::string cut = Batch("a value that is cut");
    cut.resize(cut.size() - 5);
    s.Send(Frame(ApiKey::kProduce, 7, OneBatch("t", 0, cut)));
    auto body = s.Receive();
    REQUIRE(body);
    auto pr = Decode<kafka::ProduceResponse>(ApiKey::kProduce, 7, *body);
    CHECK(pr.topics[0].partitions[0].error_code == ErrorCode::kCorruptMessage);
  }
  SECTION("a gzip batch whose compressed bytes do not inflate is CORRUPT_MESSAGE, refused whole") {
    Socket s(f.kafka());
    const std::string value(200, 'z');  // outlives the record, which only views it
    storage::RecordInput r;
    r.value = value;
    r.timestamp = TimestampMs(1700000000000);
    storage::BatchOptions o;
    o.base_offset = Offset(0);
    o.attributes = 1;  // gzip
    std::string bad = storage::EncodeBatch(o, std::span(&r, 1));
    REQUIRE(bad.size() > storage::kBatchHeaderSize + 8);
    // Scramble the deflate stream, then seal the batch with a CRC that matches the damage, so
    // only decompressing it can tell.
    for (size_t i = storage::kBatchHeaderSize + 2; i < bad.size(); i += 3)
      bad[i] = static_cast<char>(~bad[i]);
    const uint32_t crc = storage::ComputeBatchCrc(std::as_bytes(std::span(bad)));
    for (int i = 0; i < 4; ++i) bad[storage::batch_field::kCrc + i] = static_cast<char>(crc >> (24 - 8 * i));
    s.Send(Frame(ApiKey::kProduce, 7, OneBatch("t", 0, bad)));
    auto body = s.Receive();
    REQUIRE(body);
    auto pr = Decode<kafka::ProduceResponse>(ApiKey::kProduce, 7, *body);
    CHECK(pr.topics[0].partitions[0].error_code == ErrorCode::kCorruptMessage);
  }
  StillServes(f);
  // Nothing stored changed: the same records, and the segment files hold the same bytes.
  CHECK(f.Kcat({"-C", "-t", "t", "-e", "-q", "-f", "%o %s\n"}).out == before);
  CHECK(inspect() == files_before);
}

// Produce requests a client pipelines arrive in one read and are appended together (one range,
// one commit); each must still get the answer it would have got alone.
std::string Sequenced(const std::string& value, int64_t producer_id, int32_t sequence) {
  storage::RecordInput r;
  r.value = value;
  r.timestamp = TimestampMs(1700000000000);
  storage::BatchOptions o;
  o.base_offset = Offset(0);
  o.producer_id = ProducerId(producer_id);
  o.producer_epoch = 0;
  o.base_sequence = sequence;
  return storage::EncodeBatch(o, std::span(&r, 1));
}

std::vector<kafka::ProducePartitionResponse> SendTogether(Socket& s,
                                                          const std::vector<std::string>& batches) {
  std::vector<std::byte> all;
  for (const std::string& b : batches) {
    auto one = Frame(ApiKey::kProduce, 7, OneBatch("p", 0, b));
    all.insert(all.end(), one.begin(), one.end());
  }
  s.Send(all);
  std::vector<kafka::ProducePartitionResponse> out;
  for (size_t i = 0; i < batches.size(); ++i) {
    auto body = s.Receive();
    REQUIRE(body);
    auto pr = Decode<kafka::ProduceResponse>(ApiKey::kProduce, 7, *body);
    REQUIRE(pr.topics.size() == 1);
    REQUIRE(pr.topics[0].partitions.size() == 1);
    out.push_back(pr.topics[0].partitions[0]);
  }
  return out;
}

TEST_CASE("Kafka port: pipelined produce requests each get their own offsets and errors", "[e2e][kafka]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "p", "--partitions", "1", "--config", "durability=durable"}), 0);
  Socket s(f.kafka());
  // Plain batches: consecutive offsets in request order.
  auto r = SendTogether(s, {Batch("a"), Batch("b"), Batch("c")});
  CHECK(r[0].error_code == ErrorCode::kNone);
  CHECK(r[1].error_code == ErrorCode::kNone);
  CHECK(r[2].error_code == ErrorCode::kNone);
  CHECK(r[0].base_offset == 0);
  CHECK(r[1].base_offset == 1);
  CHECK(r[2].base_offset == 2);
  // One idempotent producer: two in sequence, then a gap. The first two are stored, the third is
  // refused alone.
  r = SendTogether(s, {Sequenced("d", 4242, 0), Sequenced("e", 4242, 1), Sequenced("f", 4242, 5)});
  CHECK(r[0].error_code == ErrorCode::kNone);
  CHECK(r[1].error_code == ErrorCode::kNone);
  CHECK(r[0].base_offset == 3);
  CHECK(r[1].base_offset == 4);
  CHECK(r[2].error_code == ErrorCode::kOutOfOrderSequenceNumber);
  // A retry of the second together with the next in sequence: the retry is a duplicate (its
  // offset again), the new one is stored after it.
  r = SendTogether(s, {Sequenced("e", 4242, 1), Sequenced("g", 4242, 2)});
  CHECK(r[0].error_code == ErrorCode::kNone);
  CHECK(r[0].base_offset == 4);
  CHECK(r[1].error_code == ErrorCode::kNone);
  CHECK(r[1].base_offset == 5);
  CHECK(f.Kcat({"-C", "-t", "p", "-e", "-q", "-f", "%o %s\n"}).out == "0 a\n1 b\n2 c\n3 d\n4 e\n5 g\n");
}

TEST_CASE("Kafka port: two idempotent producers' pipelined requests on one durable partition",
          "[e2e][kafka]") {
  Fixture f;
  REQUIRE_RUN(f.Rdmq({"topic", "create", "q", "--partitions", "1", "--config", "durability=durable"}), 0);
  Socket a(f.kafka());
  Socket b(f.kafka());
  // Both connections' requests reach the partition's append queue together; each producer's
  // run is checked and stored on its own, in its own order.
  auto frames = [](int64_t producer, const std::string& prefix) {
    std::vector<std::byte> all;
    for (int i = 0; i < 3; ++i) {
      auto one =
          Frame(ApiKey::kProduce, 7, OneBatch("q", 0, Sequenced(prefix + std::to_string(i), producer, i)));
      all.insert(all.end(), one.begin(), one.end());
    }
    return all;
  };
  a.Send(frames(7001, "a"));
  b.Send(frames(7002, "b"));
  std::vector<int64_t> offsets;
  for (Socket* s : {&a, &b}) {
    for (int i = 0; i < 3; ++i) {
      auto body = s->Receive();
      REQUIRE(body);
      auto pr = Decode<kafka::ProduceResponse>(ApiKey::kProduce, 7, *body);
      REQUIRE(pr.topics.size() == 1);
      CHECK(pr.topics[0].partitions[0].error_code == ErrorCode::kNone);
      offsets.push_back(pr.topics[0].partitions[0].base_offset);
    }
  }
  // Each producer's offsets increase; together they are 0..5, each once.
  CHECK(offsets[0] < offsets[1]);
  CHECK(offsets[1] < offsets[2]);
  CHECK(offsets[3] < offsets[4]);
  CHECK(offsets[4] < offsets[5]);
  std::vector<int64_t> sorted = offsets;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  const std::string out = f.Kcat({"-C", "-t", "q", "-e", "-q", "-f", "%o %s\n"}).out;
  for (int i = 0; i < 6; ++i) {
    const std::string value = (i < 3 ? "a" : "b") + std::to_string(i % 3);
    CHECK(Contains(out, std::to_string(offsets[static_cast<size_t>(i)]) + " " + value + "\n"));
  }
}

}  // namespace
}  // namespace rdmq::test
