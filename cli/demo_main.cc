// rdmq-demo: the two halves of the main job (deploy/run-main.sh), each its own process.
//
//   rdmq-demo consume --topic demo --records 1000000 &   # waits for and verifies every record
//   rdmq-demo produce --topic demo --records 1000000     # produces them, measures acks
//
// Every value carries its sequence number, the producer's send time (CLOCK_MONOTONIC, which
// both processes share on one host), deterministic filler bytes and a CRC-32C of the rest, so
// the consumer can tell lost, duplicated, reordered and corrupt records apart and measure
// produce-to-consume latency. The producer runs two phases: `--records` as fast as it can
// (throughput, and produce-to-ack under load), then `--latency-records` with one record in
// flight (produce-to-ack and produce-to-consume of a lone record).
//
// Exit status: 0 when everything verified, 1 when anything was lost, duplicated, reordered or
// corrupt (or the broker failed), 2 on a bad command line.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rdmq/cli/args.h"
#include "rdmq/client/admin.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/crc32c.h"
#include "rdmq/common/main.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/producer.h"

namespace rdmq::cli {
namespace {

using nlohmann::ordered_json;

constexpr size_t kMinValueBytes = 24;

// Value layout (little-endian): 0 u64 sequence, 8 u64 send time (ns), 16 u32 value length,
// 20 .. len-4 filler bytes (a function of sequence and index), len-4 u32 CRC-32C of [0, len-4).
void FillValue(uint64_t seq, uint64_t send_ns, std::string* v) {
  const size_t len = v->size();
  auto* p = reinterpret_cast<std::byte*>(v->data());
  coding::StoreLE<uint64_t>(p, seq);
  coding::StoreLE<uint64_t>(p + 8, send_ns);
  coding::StoreLE<uint32_t>(p + 16, static_cast<uint32_t>(len));
  for (size_t i = 20; i + 4 < len; ++i) (*v)[i] = static_cast<char>((seq * 131 + i) & 0xff);
  coding::StoreLE<uint32_t>(p + len - 4, crc32c::Value(p, len - 4));
}

enum class Check { kOk, kBadLength, kBadCrc, kBadFiller };
Check CheckValue(std::string_view v, uint64_t* seq, uint64_t* send_ns) {
  if (v.size() < kMinValueBytes) return Check::kBadLength;
  const auto* p = reinterpret_cast<const std::byte*>(v.data());
  if (coding::LoadLE<uint32_t>(p + 16) != v.size()) return Check::kBadLength;
  if (coding::LoadLE<uint32_t>(p + v.size() - 4) != crc32c::Value(p, v.size() - 4)) return Check::kBadCrc;
  *seq = coding::LoadLE<uint64_t>(p);
  *send_ns = coding::LoadLE<uint64_t>(p + 8);
  for (size_t i = 20; i < v.size() - 4; ++i) {
    if (v[i] != static_cast<char>((*seq * 131 + i) & 0xff)) return Check::kBadFiller;
  }
  return Check::kOk;
}

struct Latency {
  std::vector<uint64_t> ns;
  ordered_json Json() {
    std::sort(ns.begin(), ns.end());
    auto at = [&](double q) -> double {
      if (ns.empty()) return 0;
      const size_t i = std::min(ns.size() - 1, static_cast<size_t>(q * static_cast<double>(ns.size())));
      return static_cast<double>(ns[i]) / 1000.0;
    };
    return {{"count", ns.size()},
            {"p50_us", at(0.50)},
            {"p99_us", at(0.99)},
            {"max_us", ns.empty() ? 0.0 : static_cast<double>(ns.back()) / 1000.0}};
  }
};

std::string LatencyLine(const ordered_json& j) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "p50 %.1f us, p99 %.1f us, max %.1f us (%" PRIu64 " records)",
                j["p50_us"].get<double>(), j["p99_us"].get<double>(), j["max_us"].get<double>(),
                j["count"].get<uint64_t>());
  return buf;
}

std::vector<OptionSpec> CommonOptions() {
  return {
      {"broker", 'b', "ADDR", "broker address (default: $RDMQ_BROKER, else unix:./rdmq-data/rdmq.sock)"},
      {"topic", 't', "NAME", "topic (must exist; default rdmq-demo)"},
      {"records", 'n', "N", "records in the throughput phase (default 1000000)"},
      {"latency-records", 'l', "N", "records sent one at a time afterwards (default 10000)"},
      {"config", 'X', "KEY=VALUE", "producer or consumer setting; repeatable", true},
      {"json-out", 0, "FILE", "also write the results as JSON to FILE"},
  };
}

CommandSpec ProduceSpec() {
  CommandSpec s;
  s.path = "rdmq-demo produce";
  s.usage = "[options]";
  s.summary = "Produce the demo's records and report throughput and produce-to-ack latency.";
  s.options = CommonOptions();
  s.options.push_back({"value-bytes", 's', "N", "bytes per value, at least 24 (default 100)"});
  s.examples = {"rdmq-demo produce --topic demo --records 1000000 --value-bytes 100"};
  return s;
}

CommandSpec ConsumeSpec() {
  CommandSpec s;
  s.path = "rdmq-demo consume";
  s.usage = "[options]";
  s.summary = "Consume and verify the demo's records; report throughput and produce-to-consume latency.";
  s.options = CommonOptions();
  s.options.push_back(
      {"idle-timeout", 0, "SECONDS", "fail when no record arrives for this long (default 60)"});
  s.options.push_back({"ready-file", 0, "PATH", "create PATH once subscribed (a script waits for it)"});
  s.examples = {"rdmq-demo consume --topic demo --records 1000000"};
  return s;
}

struct Common {
  std::string topic;
  int64_t records = 0;
  int64_t latency_records = 0;
  std::vector<std::pair<std::string, std::string>> configs;
  std::string json_out;
};

Result<Common> ParseCommon(const ParsedArgs& a) {
  Common c;
  c.topic = a.GetOr("topic", "rdmq-demo");
  RDMQ_ASSIGN_OR_RETURN(c.records, a.GetInt("records", 1'000'000, 0, int64_t{1} << 40));
  RDMQ_ASSIGN_OR_RETURN(c.latency_records, a.GetInt("latency-records", 10'000, 0, int64_t{1} << 30));
  for (const auto& kv : a.GetAll("config")) {
    RDMQ_ASSIGN_OR_RETURN(auto p, ParseKeyValue(kv, "-X"));
    c.configs.push_back(std::move(p));
  }
  if (auto b = a.Get("broker")) c.configs.emplace_back("bootstrap.servers", *b);
  c.json_out = a.GetOr("json-out", "");
  return c;
}

void WriteJson(const std::string& path, const ordered_json& j) {
  if (path.empty()) return;
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) std::cerr << "rdmq-demo: cannot write " << path << "\n";
}

double Mb(uint64_t bytes) { return static_cast<double>(bytes) / 1e6; }

// ---------------------------------------------------------------------------------------------

int Produce(const ParsedArgs& a) {
  auto c = ParseCommon(a);
  if (!c.ok()) return std::cerr << "rdmq-demo: " << FormatError(c.status()) << "\n", kExitUsage;
  auto value_bytes = a.GetInt("value-bytes", 100, kMinValueBytes, 16 << 20);
  if (!value_bytes.ok())
    return std::cerr << "rdmq-demo: " << FormatError(value_bytes.status()) << "\n", kExitUsage;
  producer::ProducerConfig cfg;
  cfg.client.client_name = "rdmq-demo-producer";
  for (const auto& [k, v] : c->configs) {
    if (Status s = cfg.Set(k, v); !s.ok()) {
      std::cerr << "rdmq-demo: -X " << k << "=" << v << ": " << FormatError(s) << "\n";
      return kExitUsage;
    }
  }
  auto created = producer::Producer::Create(cfg);
  if (!created.ok()) {
    std::cerr << "rdmq-demo: cannot start a producer for " << cfg.client.ResolvedBootstrap() << ": "
              << FormatError(created.status()) << "\n";
    return kExitError;
  }
  auto& prod = *created;
  const uint64_t n = static_cast<uint64_t>(c->records);
  const uint64_t total = n + static_cast<uint64_t>(c->latency_records);

  std::mutex mu;
  std::vector<uint64_t> send_ns(n);
  Latency ack;
  ack.ns.reserve(n);
  // Where each record landed; checked after the run: per partition, offsets grow with the
  // sequence (callbacks themselves may complete in any order).
  std::vector<int32_t> partition_of(total, -1);
  std::vector<int64_t> offset_of(total, -1);
  std::atomic<uint64_t> failed{0};
  uint64_t disordered = 0, callback_inversions = 0;
  std::map<int32_t, int64_t> last_acked;
  std::string first_error;
  auto on_ack = [&](uint64_t seq, const Result<producer::RecordMetadata>& md) {
    const uint64_t now = MonoNanos();
    std::lock_guard<std::mutex> lock(mu);
    if (!md.ok()) {
      if (failed.fetch_add(1) == 0)
        first_error = "record " + std::to_string(seq) + ": " + FormatError(md.status());
      return;
    }
    if (seq < n) ack.ns.push_back(now - send_ns[seq]);
    partition_of[seq] = md->partition;
    offset_of[seq] = md->offset;
    auto [it, fresh] = last_acked.emplace(md->partition, md->offset);
    if (!fresh) {
      if (md->offset < it->second) ++callback_inversions;
      it->second = std::max(it->second, md->offset);
    }
  };

  std::string value(static_cast<size_t>(*value_bytes), '\0');
  producer::ProducerRecord rec;
  rec.topic = c->topic;
  rec.value = value;
  std::cerr << "rdmq-demo: producing " << n << " records of " << value.size() << " bytes to " << c->topic
            << " at " << cfg.client.ResolvedBootstrap() << " (acks=" << cfg.acks << ")\n";
  const uint64_t t0 = MonoNanos();
  uint64_t progress_at = t0 + 1'000'000'000;
  for (uint64_t seq = 0; seq < n; ++seq) {
    const uint64_t now = MonoNanos();
    send_ns[seq] = now;
    FillValue(seq, now, &value);
    Status s =
        prod->Send(rec, [&on_ack, seq](const Result<producer::RecordMetadata>& md) { on_ack(seq, md); });
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (failed.fetch_add(1) == 0) first_error = "record " + std::to_string(seq) + ": " + FormatError(s);
    }
    if ((seq & 0xfff) == 0 && now > progress_at) {
      std::cerr << "rdmq-demo: produced " << seq << " records\n";
      progress_at = now + 1'000'000'000;
    }
  }
  Status flushed = prod->Flush();
  const uint64_t t1 = MonoNanos();
  if (!flushed.ok()) std::cerr << "rdmq-demo: flush: " << FormatError(flushed) << "\n";

  // One record in flight: the latency of a lone record.
  Latency lone;
  lone.ns.reserve(static_cast<size_t>(c->latency_records));
  for (uint64_t seq = n; seq < total; ++seq) {
    const uint64_t now = MonoNanos();
    FillValue(seq, now, &value);
    auto md = prod->Send(rec).get();
    const uint64_t done = MonoNanos();
    on_ack(seq, md);
    if (md.ok()) lone.ns.push_back(done - now);
  }
  Status closed = prod->Close();
  if (cfg.acks != 0) {
    std::map<int32_t, std::pair<int64_t, uint64_t>> last;  // partition -> (offset, sequence)
    for (uint64_t seq = 0; seq < total; ++seq) {
      if (partition_of[seq] < 0) continue;  // failed (counted already)
      auto [it, fresh] = last.emplace(partition_of[seq], std::make_pair(offset_of[seq], seq));
      if (fresh) continue;
      if (offset_of[seq] <= it->second.first) {
        if (disordered++ == 0) {
          std::cerr << "rdmq-demo: record " << seq << " got offset " << offset_of[seq] << " in partition "
                    << partition_of[seq] << ", not above record " << it->second.second << "'s "
                    << it->second.first << "\n";
        }
      }
      it->second = {offset_of[seq], seq};
    }
  }

  const double secs = static_cast<double>(t1 - t0) / 1e9;
  ordered_json j;
  j["role"] = "producer";
  j["topic"] = c->topic;
  j["records"] = n;
  j["value_bytes"] = value.size();
  j["acks"] = cfg.acks;
  j["seconds"] = secs;
  j["records_per_s"] = static_cast<double>(n) / secs;
  j["mb_per_s"] = Mb(n * value.size()) / secs;
  j["produce_to_ack_under_load"] = ack.Json();
  j["produce_to_ack_one_in_flight"] = lone.Json();
  j["failed"] = failed.load();
  j["offsets_out_of_order"] = disordered;
  j["callbacks_out_of_order"] = callback_inversions;
  std::printf("producer: %" PRIu64 " records of %zu B in %.3f s: %.0f records/s, %.1f MB/s (acks=%d)\n", n,
              value.size(), secs, j["records_per_s"].get<double>(), j["mb_per_s"].get<double>(), cfg.acks);
  std::printf("producer: produce-to-ack under load:      %s\n",
              LatencyLine(j["produce_to_ack_under_load"]).c_str());
  std::printf("producer: produce-to-ack, one in flight:  %s\n",
              LatencyLine(j["produce_to_ack_one_in_flight"]).c_str());
  std::fflush(stdout);
  WriteJson(c->json_out, j);
  bool ok = failed.load() == 0 && disordered == 0 && flushed.ok() && closed.ok();
  if (failed.load() > 0)
    std::cerr << "rdmq-demo: " << failed.load() << " records failed; first: " << first_error << "\n";
  if (disordered > 0) std::cerr << "rdmq-demo: " << disordered << " records with offsets out of send order\n";
  if (callback_inversions > 0) {
    std::cerr << "rdmq-demo: note: " << callback_inversions
              << " acknowledgements arrived after one for a later offset of the same partition\n";
  }
  if (!closed.ok()) std::cerr << "rdmq-demo: close: " << FormatError(closed) << "\n";
  return ok ? kExitOk : kExitError;
}

// ---------------------------------------------------------------------------------------------

int Consume(const ParsedArgs& a) {
  auto c = ParseCommon(a);
  if (!c.ok()) return std::cerr << "rdmq-demo: " << FormatError(c.status()) << "\n", kExitUsage;
  auto idle = a.GetInt("idle-timeout", 60, 1, 86400);
  if (!idle.ok()) return std::cerr << "rdmq-demo: " << FormatError(idle.status()) << "\n", kExitUsage;
  consumer::ConsumerConfig cfg;
  cfg.client.client_name = "rdmq-demo-consumer";
  for (const auto& [k, v] : c->configs) {
    if (Status s = cfg.Set(k, v); !s.ok()) {
      std::cerr << "rdmq-demo: -X " << k << "=" << v << ": " << FormatError(s) << "\n";
      return kExitUsage;
    }
  }
  auto admin = client::AdminClient::Connect(cfg.client);
  if (!admin.ok()) {
    std::cerr << "rdmq-demo: cannot reach the broker at " << cfg.client.ResolvedBootstrap() << ": "
              << FormatError(admin.status()) << "\n";
    return kExitError;
  }
  auto topic = (*admin)->DescribeTopic(c->topic);
  if (!topic.ok()) {
    std::cerr << "rdmq-demo: topic " << c->topic << ": " << FormatError(topic.status()) << "\n";
    return kExitError;
  }
  std::vector<client::TopicPartition> tps;
  for (const auto& p : topic->partitions) tps.push_back({c->topic, p.partition});
  auto created = consumer::Consumer::Create(cfg);
  if (!created.ok()) {
    std::cerr << "rdmq-demo: cannot start a consumer: " << FormatError(created.status()) << "\n";
    return kExitError;
  }
  auto& cons = *created;
  if (Status s = cons->Assign(tps); !s.ok())
    return std::cerr << "rdmq-demo: assign: " << FormatError(s) << "\n", 1;
  if (Status s = cons->SeekToBeginning(tps); !s.ok()) {
    return std::cerr << "rdmq-demo: seek: " << FormatError(s) << "\n", kExitError;
  }

  if (auto ready = a.Get("ready-file")) {
    std::ofstream(*ready) << "ready\n";
  }

  const uint64_t n = static_cast<uint64_t>(c->records);
  const uint64_t total = n + static_cast<uint64_t>(c->latency_records);
  std::vector<bool> seen(total, false);
  uint64_t unique = 0, duplicates = 0, corrupt = 0, unexpected = 0, reordered = 0;
  uint64_t phase1 = 0, phase1_bytes = 0;                 // throughput counts the first phase only
  std::map<int32_t, std::pair<int64_t, uint64_t>> last;  // partition -> (offset, sequence)
  Latency under_load, lone;
  under_load.ns.reserve(n);
  uint64_t first_ns = 0, last_ns = 0, last_progress = MonoNanos();
  std::string first_problem;
  auto problem = [&](std::string what) {
    if (first_problem.empty()) first_problem = std::move(what);
  };
  std::cerr << "rdmq-demo: consuming " << total << " records from " << c->topic << " (" << tps.size()
            << " partition" << (tps.size() == 1 ? "" : "s") << ")\n";
  Status error;
  // Phase 1: until every record arrived; phase 2 (drain): up to the high watermark, to catch
  // anything extra.
  bool draining = false;
  std::map<int32_t, int64_t> ends;
  while (true) {
    if (!draining && unique == total) {
      draining = true;
      auto d = (*admin)->DescribeTopic(c->topic);
      if (!d.ok()) {
        error = d.status();
        break;
      }
      for (const auto& p : d->partitions) ends[p.partition] = p.high_watermark;
    }
    if (draining) {
      bool at_end = true;
      for (const auto& tp : tps) {
        auto pos = cons->Position(tp);
        if (!pos.ok()) {
          error = pos.status();
          break;
        }
        at_end = at_end && *pos >= ends[tp.partition];
      }
      if (!error.ok() || at_end) break;
    }
    auto records = cons->Poll(std::chrono::milliseconds(200));
    if (!records.ok()) {
      error = records.status();
      break;
    }
    const uint64_t now = MonoNanos();
    if (records->empty()) {
      if (now - last_progress > static_cast<uint64_t>(*idle) * 1'000'000'000ULL) {
        error = Status(Errc::kTimeout, "no record for " + std::to_string(*idle) + " s with " +
                                           std::to_string(total - unique) + " records still missing");
        break;
      }
      continue;
    }
    last_progress = now;
    if (first_ns == 0) first_ns = now;
    for (const consumer::ConsumerRecord& r : *records) {
      uint64_t seq = 0, sent = 0;
      const std::string_view v = r.value.value_or(std::string_view());
      const Check check = CheckValue(v, &seq, &sent);
      if (check != Check::kOk) {
        ++corrupt;
        problem("corrupt value at partition " + std::to_string(r.partition) + " offset " +
                std::to_string(r.offset) +
                (check == Check::kBadCrc      ? " (CRC mismatch)"
                 : check == Check::kBadLength ? " (bad length)"
                                              : " (bad bytes)"));
        continue;
      }
      if (seq >= total) {
        ++unexpected;
        problem("unexpected sequence " + std::to_string(seq) + " at offset " + std::to_string(r.offset));
        continue;
      }
      if (seen[seq]) {
        ++duplicates;
        problem("duplicate of record " + std::to_string(seq) + " at partition " +
                std::to_string(r.partition) + " offset " + std::to_string(r.offset));
        continue;
      }
      seen[seq] = true;
      ++unique;
      auto [it, fresh] = last.emplace(r.partition, std::make_pair(r.offset, seq));
      if (!fresh) {
        if (r.offset <= it->second.first || seq <= it->second.second) {
          ++reordered;
          problem("record " + std::to_string(seq) + " at offset " + std::to_string(r.offset) +
                  " after record " + std::to_string(it->second.second) + " at offset " +
                  std::to_string(it->second.first) + " in partition " + std::to_string(r.partition));
        }
        it->second = {r.offset, seq};
      }
      (seq < n ? under_load : lone).ns.push_back(now - sent);
      if (seq < n) {
        last_ns = now;
        ++phase1;
        phase1_bytes += v.size();
      }
    }
  }
  cons->Close();
  const uint64_t lost = total - unique;
  const double secs = last_ns > first_ns ? static_cast<double>(last_ns - first_ns) / 1e9 : 0.0;
  ordered_json j;
  j["role"] = "consumer";
  j["topic"] = c->topic;
  j["expected"] = total;
  j["received"] = unique;
  j["lost"] = lost;
  j["duplicates"] = duplicates;
  j["corrupt"] = corrupt;
  j["unexpected"] = unexpected;
  j["out_of_order"] = reordered;
  j["seconds"] = secs;
  j["throughput_records"] = phase1;
  j["records_per_s"] = secs > 0 ? static_cast<double>(phase1) / secs : 0.0;
  j["mb_per_s"] = secs > 0 ? Mb(phase1_bytes) / secs : 0.0;
  j["produce_to_consume_under_load"] = under_load.Json();
  j["produce_to_consume_one_in_flight"] = lone.Json();
  if (!error.ok()) j["error"] = FormatError(error);
  std::printf("consumer: %" PRIu64 " of %" PRIu64 " records; the %" PRIu64
              " of the throughput phase in %.3f s (first to last): %.0f records/s, %.1f MB/s\n",
              unique, total, phase1, secs, j["records_per_s"].get<double>(), j["mb_per_s"].get<double>());
  std::printf("consumer: produce-to-consume under load:      %s\n",
              LatencyLine(j["produce_to_consume_under_load"]).c_str());
  std::printf("consumer: produce-to-consume, one in flight:  %s\n",
              LatencyLine(j["produce_to_consume_one_in_flight"]).c_str());
  std::printf("consumer: verified: %" PRIu64 " lost, %" PRIu64 " duplicated, %" PRIu64 " corrupt, %" PRIu64
              " out of order, %" PRIu64 " unexpected\n",
              lost, duplicates, corrupt, reordered, unexpected);
  std::fflush(stdout);
  WriteJson(c->json_out, j);
  if (!error.ok()) std::cerr << "rdmq-demo: consume: " << FormatError(error) << "\n";
  if (!first_problem.empty()) std::cerr << "rdmq-demo: first problem: " << first_problem << "\n";
  if (lost > 0 && error.ok()) std::cerr << "rdmq-demo: " << lost << " records lost\n";
  const bool ok =
      error.ok() && lost == 0 && duplicates == 0 && corrupt == 0 && unexpected == 0 && reordered == 0;
  return ok ? kExitOk : kExitError;
}

int Main(int argc, char** argv) {
  CommandSpec top;
  top.path = "rdmq-demo";
  top.usage = "produce|consume [options]";
  top.summary = "The main job's producer and consumer processes (see deploy/run-main.sh).";
  top.subcommands = {{"produce", ProduceSpec().summary}, {"consume", ConsumeSpec().summary}};
  top.examples = {"rdmq-demo consume --topic demo & rdmq-demo produce --topic demo; wait"};
  std::vector<std::string> words(argv + 1, argv + argc);
  if (words.empty() || (words[0] != "produce" && words[0] != "consume")) {
    auto a = top.Parse(words);
    if (a.ok() && a->help()) {
      std::cout << top.HelpText();
      return kExitOk;
    }
    std::cerr << top.HelpText() << "\nrdmq-demo: "
              << (words.empty() ? std::string("no command given") : "unknown command '" + words[0] + "'")
              << "\n";
    return kExitUsage;
  }
  const bool produce = words[0] == "produce";
  const CommandSpec spec = produce ? ProduceSpec() : ConsumeSpec();
  words.erase(words.begin());
  auto a = spec.Parse(words);
  if (!a.ok()) {
    std::cerr << "rdmq-demo: " << FormatError(a.status()) << "\n";
    return kExitUsage;
  }
  if (a->help()) {
    std::cout << spec.HelpText();
    return kExitOk;
  }
  return produce ? Produce(*a) : Consume(*a);
}

}  // namespace
}  // namespace rdmq::cli

int main(int argc, char** argv) {
  return rdmq::RunMain("rdmq-demo", [&] { return rdmq::cli::Main(argc, argv); });
}
