// rdmq-consume: records to standard output, one per line (like `kcat -C`).
//
//   rdmq-consume orders                          # values, following the log until Ctrl-C
//   rdmq-consume -e -o beginning -f '%p:%o %k=%s\n' orders
//   rdmq-consume --json -c 10 orders | jq .value
//
// Exit status: 0 (stopped by -c, -e, a signal, or a closed output pipe), 1 on an error (the
// broker, a corrupt batch, an unknown topic), 2 on a bad command line.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "rdmq/cli/args.h"
#include "rdmq/cli/records.h"
#include "rdmq/client/admin.h"
#include "rdmq/common/main.h"
#include "rdmq/config/render.h"
#include "rdmq/consumer/consumer.h"

namespace rdmq::cli {
namespace {

using client::TopicPartition;

CommandSpec Spec() {
  CommandSpec s;
  s.path = "rdmq-consume";
  s.usage = "[options] TOPIC";
  s.summary = "Print TOPIC's records on standard output, one per line, following the log.";
  s.description =
      "By default every partition is read from the beginning and each record's value is printed\n"
      "followed by a newline; the tool then waits for new records until interrupted.\n"
      "Format directives for -f (kcat's): %s or %v value, %k key, %t topic, %p partition,\n"
      "%o offset, %T timestamp (ms), %h headers (k=v,k2=v2), %K / %S key / value length,\n"
      "%% a percent sign; escapes \\n \\t \\r \\\\ \\0 \\xHH. A null key or value prints as nothing.\n"
      "Exit status: 0 done (-c, -e, a signal, or the output pipe closed), 1 error, 2 bad command line.";
  s.options = {
      {"broker", 'b', "ADDR", "broker address (default: $RDMQ_BROKER, else unix:./rdmq-data/rdmq.sock)"},
      {"partition", 'p', "N", "read only partition N; repeatable (default: every partition)", true},
      {"offset", 'o', "SPEC",
       "where to start in each partition: beginning (default), end, an offset N,\n"
       "-N (N records before the end), @MS or s@MS (first record at or after a timestamp)"},
      {"count", 'c', "N", "exit after N records"},
      {"exit-at-end", 'e', "", "exit once every partition is read up to its end"},
      {"format", 'f', "FMT", "output format per record (default '%s\\n'; with -K: '%k<DELIM>%s\\n')"},
      {"key-delimiter", 'K', "DELIM", "print key DELIM value (the inverse of rdmq-produce -K)"},
      {"delimiter", 'D', "DELIM", "record delimiter instead of \\n (ignored with -f and --json)"},
      {"json", 0, "",
       "one JSON object per record: topic, partition, offset, timestamp_ms, key, value, headers"},
      {"consumer-config", 'X', "KEY=VALUE", "a consumer setting (listed below); repeatable", true},
      {"verbose", 'v', "", "report on stderr when a partition's end is reached"},
  };
  s.examples = {"rdmq-consume orders", "rdmq-consume -e orders > all-values.txt",
                "rdmq-consume -o -10 -e -f 'partition %p offset %o: %k=%s\\n' orders",
                "rdmq-consume -K : -e orders      # pairs with: rdmq-produce -K : orders",
                "rdmq-consume --json -c 1 -o end orders"};
  s.settings_title = "Consumer settings (-X KEY=VALUE; what each does: rdmq config list consumer)";
  s.settings = config::RenderKeysBrief(consumer::ConsumerConfigDef().Describe(), 2);
  s.min_positional = 1;
  s.max_positional = 1;
  return s;
}

int Usage(const Status& s) {
  std::cerr << "rdmq-consume: " << FormatError(s) << "\n";
  return kExitUsage;
}

int Fail(const std::string& what, const Status& s) {
  std::cerr << "rdmq-consume: " << what << (what.empty() ? "" : ": ") << FormatError(s) << "\n";
  return kExitError;
}

// Writes all of `data` to stdout. kBrokenPipe when the reader went away.
Status WriteOut(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) return Status(CliErrc::kBrokenPipe, "stdout");
      return Status::FromErrno(errno, "write to stdout");
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

// True when stdout is a pipe or socket whose reader has gone away. Checked while no records
// arrive, so `rdmq-consume topic | head -n 3` ends once head does even when the log is quiet and
// there is nothing more to write (a write would only then report EPIPE).
bool StdoutReaderGone() {
  pollfd p{STDOUT_FILENO, 0, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP)) != 0;
}

int Main(int argc, char** argv) {
  int exit_code = kExitOk;
  const auto a = config::ParseCommandLine(Spec(), argc, argv, &exit_code);
  if (!a) return exit_code;
  const std::string topic = a->positional()[0];

  consumer::ConsumerConfig cfg;
  cfg.client.client_name = "rdmq-consume";
  if (Status s = ApplyKeyValues(*a, "consumer-config", cfg); !s.ok()) return Usage(s);
  if (auto b = a->Get("broker")) cfg.client.bootstrap = *b;
  auto start = ParseOffsetSpec(a->GetOr("offset", "beginning"));
  if (!start.ok()) return Usage(start.status());
  auto limit = a->GetInt("count", -1, 1, INT64_MAX);
  if (!limit.ok()) return Usage(limit.status());
  std::vector<int32_t> only;
  for (const auto& p : a->GetAll("partition")) {
    auto n = ParseInt(p, "--partition", 0, 4095);
    if (!n.ok()) return Usage(n.status());
    only.push_back(static_cast<int32_t>(*n));
  }
  const bool json = a->Has("json");
  const bool exit_at_end = a->Has("exit-at-end");
  const bool verbose = a->Has("verbose");
  std::string format = "%s\\n";
  if (auto d = a->Get("delimiter")) {
    auto u = Unescape(*d, "--delimiter");
    if (!u.ok()) return Usage(u.status());
    std::string escaped;
    for (char c : *u) {  // back into format-string form
      if (c == '%') {
        escaped += "%%";
      } else if (c == '\\') {
        escaped += "\\\\";
      } else {
        escaped.push_back(c);
      }
    }
    format = "%s" + escaped;
  }
  if (auto k = a->Get("key-delimiter")) {
    auto u = Unescape(*k, "--key-delimiter");
    if (!u.ok()) return Usage(u.status());
    std::string escaped;
    for (char c : *u)
      escaped += c == '%' ? std::string("%%") : c == '\\' ? std::string("\\\\") : std::string(1, c);
    format = "%k" + escaped + format;
  }
  if (auto f = a->Get("format")) format = *f;
  auto formatter = RecordFormatter::Compile(format);
  if (!formatter.ok()) return Usage(formatter.status());

  // Signals go to one thread that wakes the consumer; every other thread blocks them.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto admin = client::AdminClient::Connect(cfg.client);
  if (!admin.ok())
    return Fail("cannot reach the broker at " + cfg.client.ResolvedBootstrap(), admin.status());
  auto described = (*admin)->DescribeTopic(topic);
  if (!described.ok()) return Fail("topic " + topic, described.status());
  std::map<int32_t, client::PartitionDescription> parts;
  for (const auto& p : described->partitions) parts[p.partition] = p;
  std::vector<TopicPartition> assignment;
  if (only.empty()) {
    for (const auto& [n, p] : parts) assignment.push_back({topic, n});
  } else {
    for (int32_t n : only) {
      if (!parts.count(n)) {
        std::cerr << "rdmq-consume: topic " << topic << " has no partition " << n << " (it has "
                  << parts.size() << ")\n";
        return kExitError;
      }
      assignment.push_back({topic, n});
    }
  }

  auto created = consumer::Consumer::Create(cfg);
  if (!created.ok()) return Fail("cannot start a consumer", created.status());
  auto& cons = *created;
  if (Status s = cons->Assign(assignment); !s.ok()) return Fail("assign", s);
  for (const auto& tp : assignment) {
    const auto& p = parts[tp.partition];
    int64_t at = ResolveStartOffset(*start, p.log_start_offset, p.high_watermark);
    if (start->kind == OffsetSpec::Kind::kTimestamp) {
      auto t = cons->OffsetForTime(tp, start->value);
      if (!t.ok()) return Fail("find the offset for timestamp " + std::to_string(start->value), t.status());
      at = *t >= 0 ? *t : p.high_watermark;
    }
    if (Status s = cons->Seek(tp, at); !s.ok()) {
      return Fail("seek partition " + std::to_string(tp.partition) + " to offset " + std::to_string(at), s);
    }
  }

  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};
  std::thread signals([&] {
    timespec tick{0, 200'000'000};
    while (!done.load()) {
      if (sigtimedwait(&sigs, nullptr, &tick) > 0) {
        stop.store(true);
        cons->Wakeup();
      }
    }
  });

  // -e: the end of each partition, refreshed when a poll finds nothing new.
  std::map<int32_t, int64_t> ends;
  for (const auto& tp : assignment) ends[tp.partition] = parts[tp.partition].high_watermark;
  std::map<int32_t, bool> reported_end;
  auto all_at_end = [&](bool refresh) -> Result<bool> {
    if (refresh) {
      auto d = (*admin)->DescribeTopic(topic);
      if (!d.ok()) return d.status();
      for (const auto& p : d->partitions) {
        if (ends.count(p.partition)) ends[p.partition] = p.high_watermark;
      }
    }
    bool all = true;
    for (const auto& tp : assignment) {
      auto pos = cons->Position(tp);
      if (!pos.ok()) return pos.status();
      const bool at_end = *pos >= ends[tp.partition];
      if (at_end && verbose && !reported_end[tp.partition]) {
        std::cerr << "rdmq-consume: reached the end of " << topic << " [" << tp.partition << "] at offset "
                  << *pos << "\n";
      }
      reported_end[tp.partition] = at_end;
      all = all && at_end;
    }
    return all;
  };

  int code = kExitOk;
  int64_t printed = 0;
  std::string out;
  RecordFields f;
  while (!stop.load()) {
    if (exit_at_end) {
      auto end = all_at_end(false);
      if (end.ok() && *end) end = all_at_end(true);  // confirm against the broker's current ends
      if (!end.ok()) {
        code = Fail("", end.status());
        break;
      }
      if (*end) break;
    }
    auto records = cons->Poll(std::chrono::milliseconds(exit_at_end ? 100 : 500));
    if (!records.ok()) {
      code = Fail("poll " + topic, records.status());
      break;
    }
    if (records->empty() && StdoutReaderGone()) break;
    out.clear();
    bool reached_count = false;
    for (const consumer::ConsumerRecord& r : *records) {
      f.topic = r.topic;
      f.partition = r.partition;
      f.offset = r.offset;
      f.timestamp_ms = r.timestamp_ms;
      f.key = r.key;
      f.value = r.value;
      f.headers.clear();
      for (const auto& h : r.headers) f.headers.emplace_back(h.key, h.value);
      if (json) {
        out += RecordToJson(f);
        out.push_back('\n');
      } else {
        formatter->Append(f, &out);
      }
      if (++printed == *limit) {
        reached_count = true;
        break;
      }
    }
    if (Status s = WriteOut(out); !s.ok()) {
      if (!s.is(CliErrc::kBrokenPipe)) code = Fail("", s);
      break;
    }
    if (reached_count) break;
  }
  done.store(true);
  signals.join();
  cons->Close();
  return code;
}

}  // namespace
}  // namespace rdmq::cli

int main(int argc, char** argv) {
  return rdmq::RunMain("rdmq-consume", [&] { return rdmq::cli::Main(argc, argv); });
}
