// rdmq-consume: records to standard output, one per line (like `kcat -C`).
//
//   rdmq-consume orders                          # values, following the log until Ctrl-C
//   rdmq-consume -e -o beginning -f '%p:%o %k=%s\n' orders
//   rdmq-consume --json -c 10 orders | jq .value
//   rdmq-consume -g billing --commit -e orders   # what is new since the group's last run
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
  s.usage = "[options] TOPIC  |  -g GROUP [--commit] [options] TOPIC...";
  s.summary = "Print TOPIC's records on standard output, one per line, following the log.";
  s.description =
      "By default every partition is read from the beginning and each record's value is printed\n"
      "followed by a newline; the tool then waits for new records until interrupted.\n"
      "Format directives for -f (kcat's): %s or %v value, %k key, %t topic, %p partition,\n"
      "%o offset, %T timestamp (ms), %h headers (k=v,k2=v2), %K / %S key / value length,\n"
      "%% a percent sign; escapes \\n \\t \\r \\\\ \\0 \\xHH. A null key or value prints as nothing.\n"
      "With -g GROUP the tool joins the consumer group with the TOPICs as its subscription: the\n"
      "broker assigns the partitions, which start at the group's committed offsets (a partition\n"
      "with none at auto.offset.reset, default earliest); -o and -p are refused. --commit commits\n"
      "the position after each batch of records is written to stdout (at least once: a record is\n"
      "committed only once printed). Without --commit enable.auto.commit applies (default true:\n"
      "every auto.commit.interval.ms, default 5s, and when the tool exits). With -e the tool\n"
      "exits once every partition assigned to it is at its log end (a member assigned nothing\n"
      "exits once the group is Stable).\n"
      "Exit status: 0 done (-c, -e, a signal, or the output pipe closed), 1 error, 2 bad command line.";
  s.options = {
      {"broker", 'b', "ADDR", "broker address (default: $RDMQ_BROKER, else unix:./rdmq-data/rdmq.sock)"},
      {"partition", 'p', "N", "read only partition N; repeatable (default: every partition)", true},
      {"group", 'g', "GROUP", "consume as a member of consumer group GROUP (subscribe to the TOPICs)"},
      {"commit", 0, "", "with -g: commit after each batch written to stdout (enable.auto.commit off)"},
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
  s.examples = {"rdmq-consume orders",
                "rdmq-consume -e orders > all-values.txt",
                "rdmq-consume -o -10 -e -f 'partition %p offset %o: %k=%s\\n' orders",
                "rdmq-consume -K : -e orders      # pairs with: rdmq-produce -K : orders",
                "rdmq-consume --json -c 1 -o end orders",
                "rdmq-consume -g billing --commit -e orders   # only what is new since the last run",
                "rdmq-consume -g billing orders payments      # one member of a group; run several"};
  s.settings_title = "Consumer settings (-X KEY=VALUE; what each does: rdmq config list consumer)";
  s.settings = config::RenderKeysBrief(consumer::ConsumerConfigDef().Describe(), 2);
  s.min_positional = 1;
  s.max_positional = 1000;
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

// The partitions' ends for -e, and whether this consumer has read up to them.
class EndTracker {
 public:
  EndTracker(client::AdminClient& admin, const client::ClientOptions& options, consumer::Consumer& cons,
             std::vector<std::string> topics, bool verbose)
      : admin_(admin), options_(options), cons_(cons), topics_(std::move(topics)), verbose_(verbose) {}

  void SetEnd(const TopicPartition& tp, int64_t end) { ends_[tp] = end; }

  // True when every partition in `assigned` is read up to its end; `refresh` asks the broker
  // for the current ends first. In a group (`group` set) with nothing assigned: true once this
  // member has joined and the Stable group gives it nothing (with refresh), else false.
  Result<bool> AllAtEnd(const std::vector<TopicPartition>& assigned, bool refresh, const std::string& group) {
    if (assigned.empty()) {
      if (group.empty()) return true;
      if (!refresh) return true;  // decided on the refresh that follows
      return NothingAssigned(group);
    }
    if (refresh) {
      for (const auto& topic : topics_) {
        std::vector<int32_t> mine;  // only the assigned partitions' leaders are asked
        for (const auto& tp : assigned) {
          if (tp.topic == topic) mine.push_back(tp.partition);
        }
        if (mine.empty()) continue;
        auto d = admin_.DescribeTopicAtLeaders(topic, options_, mine);
        if (!d.ok()) return d.status();
        for (const auto& p : d->partitions) ends_[{topic, p.partition}] = p.high_watermark;
      }
    }
    bool all = true;
    for (const auto& tp : assigned) {
      auto pos = cons_.Position(tp);
      if (!pos.ok()) return pos.status();
      const auto end = ends_.find(tp);
      const bool at_end = end != ends_.end() && *pos >= end->second;
      if (at_end && verbose_ && !reported_[tp]) {
        std::cerr << "rdmq-consume: reached the end of " << tp.topic << " [" << tp.partition << "] at offset "
                  << *pos << "\n";
      }
      reported_[tp] = at_end;
      all = all && at_end;
    }
    return all;
  }

 private:
  Result<bool> NothingAssigned(const std::string& group) {
    const std::string me = cons_.MemberId();
    if (me.empty()) return false;  // not joined yet
    auto g = admin_.DescribeGroup(group);
    if (!g.ok()) return g.status().is(Errc::kNotFound) ? Result<bool>(false) : Result<bool>(g.status());
    if (g->state != "Stable") return false;
    for (const auto& m : g->members) {
      if (m.member_id == me) return m.assignment.empty() && m.target.empty();
    }
    return false;
  }

  client::AdminClient& admin_;
  const client::ClientOptions& options_;
  consumer::Consumer& cons_;
  const std::vector<std::string> topics_;
  const bool verbose_;
  std::map<TopicPartition, int64_t> ends_;
  std::map<TopicPartition, bool> reported_;
};

// --commit: commits what was written, keeping what failed for the next try.
class Committer {
 public:
  explicit Committer(consumer::Consumer& cons) : cons_(cons) {}
  void Written(const consumer::ConsumerRecord& r) {
    pending_[{std::string(r.topic), r.partition}] = {r.offset + 1, "", -1};
  }
  // Commits the pending offsets of partitions still assigned (another member may own the rest
  // now, and has them from the last commit or from the start).
  Status Commit() {
    if (pending_.empty()) return Status::Ok();
    const auto assigned = cons_.Assignment();
    std::erase_if(pending_, [&](const auto& e) {
      return std::find(assigned.begin(), assigned.end(), e.first) == assigned.end();
    });
    if (pending_.empty()) return Status::Ok();
    Status s = cons_.CommitSync(pending_);
    if (s.ok()) pending_.clear();
    return s;
  }

 private:
  consumer::Consumer& cons_;
  consumer::OffsetMap pending_;
};

int Main(int argc, char** argv) {
  int exit_code = kExitOk;
  const auto a = config::ParseCommandLine(Spec(), argc, argv, &exit_code);
  if (!a) return exit_code;
  const std::vector<std::string> topics = a->positional();

  consumer::ConsumerConfig cfg;
  cfg.client.client_name = "rdmq-consume";
  if (Status s = ApplyKeyValues(*a, "consumer-config", cfg); !s.ok()) return Usage(s);
  if (auto b = a->Get("broker")) cfg.client.bootstrap = *b;
  if (auto g = a->Get("group")) cfg.group_id = *g;
  const std::string group = cfg.group_id;  // -g, or -X group.id
  const bool commit = a->Has("commit");
  if (group.empty()) {
    if (commit) return Usage(UsageError("--commit needs a consumer group (-g GROUP); " + Spec().SeeHelp()));
    if (topics.size() > 1) {
      return Usage(
          UsageError("several topics need a consumer group (-g GROUP); without one, give one TOPIC; " +
                     Spec().SeeHelp()));
    }
  } else {
    if (a->Has("offset")) {
      return Usage(
          UsageError("-o cannot be used with -g: a group starts at its committed offsets (move them with "
                     "'rdmq group reset-offsets'; where none is committed, -X auto.offset.reset decides)"));
    }
    if (a->Has("partition")) {
      return Usage(UsageError("-p cannot be used with -g: the group's broker assigns the partitions"));
    }
    if (commit) cfg.enable_auto_commit = false;  // the commits after each batch replace it
  }
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
  // Every topic must exist (a group would otherwise wait for it in silence).
  std::map<TopicPartition, client::PartitionDescription> parts;
  for (const auto& topic : topics) {
    auto described = (*admin)->DescribeTopicAtLeaders(topic, cfg.client, only);
    if (!described.ok()) return Fail("topic " + topic, described.status());
    for (const auto& p : described->partitions) parts[{topic, p.partition}] = p;
  }
  std::vector<TopicPartition> assignment;  // without a group
  if (group.empty()) {
    const std::string& topic = topics[0];
    if (only.empty()) {
      for (const auto& [tp, p] : parts) assignment.push_back(tp);
    } else {
      for (int32_t n : only) {
        if (!parts.count({topic, n})) {
          std::cerr << "rdmq-consume: topic " << topic << " has no partition " << n << " (it has "
                    << parts.size() << ")\n";
          return kExitError;
        }
        assignment.push_back({topic, n});
      }
    }
  }

  auto created = consumer::Consumer::Create(cfg);
  if (!created.ok()) return Fail("cannot start a consumer", created.status());
  auto& cons = *created;
  if (!group.empty()) {
    if (Status s = cons->Subscribe(topics); !s.ok()) return Fail("join group " + group, s);
  } else {
    if (Status s = cons->Assign(assignment); !s.ok()) return Fail("assign", s);
    for (const auto& tp : assignment) {
      const auto& p = parts[tp];
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
  EndTracker ends(**admin, cfg.client, *cons, topics, verbose);
  for (const auto& [tp, p] : parts) ends.SetEnd(tp, p.high_watermark);
  Committer committer(*cons);
  const std::string what = group.empty() ? topics[0] : "group " + group;

  int code = kExitOk;
  int64_t printed = 0;
  std::string out;
  RecordFields f;
  while (!stop.load()) {
    if (exit_at_end) {
      const auto assigned = group.empty() ? assignment : cons->Assignment();
      auto end = ends.AllAtEnd(assigned, false, group);
      if (end.ok() && *end) end = ends.AllAtEnd(assigned, true, group);  // confirm against the broker's ends
      if (!end.ok()) {
        code = Fail("", end.status());
        break;
      }
      if (*end) break;
    }
    auto records = cons->Poll(std::chrono::milliseconds(exit_at_end ? 100 : 500));
    if (!records.ok()) {
      code = Fail("poll " + what, records.status());
      break;
    }
    if (records->empty() && StdoutReaderGone()) break;
    out.clear();
    size_t used = 0;
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
      ++used;
      if (++printed == *limit) break;
    }
    const Status written = WriteOut(out);
    if (!written.ok()) used = 0;  // perhaps written in part: count none of the batch as printed
    if (!group.empty()) {
      // -c stopped inside the batch (or the output failed): move back to the first record not
      // printed, so that what the group commits (automatically, on leaving) covers printed
      // records only.
      std::map<TopicPartition, int64_t> unprinted;
      for (size_t i = used; i < records->size(); ++i) {
        const auto& r = (*records)[i];
        unprinted.try_emplace({std::string(r.topic), r.partition}, r.offset);
      }
      for (const auto& [tp, offset] : unprinted) {
        if (Status s = cons->Seek(tp, offset); !s.ok()) code = Fail("seek " + tp.topic, s);
      }
      if (commit) {
        for (size_t i = 0; i < used; ++i) committer.Written((*records)[i]);
        if (Status s = committer.Commit(); !s.ok()) {
          std::cerr << "rdmq-consume: commit to " << what << " failed (retrying after the next batch; "
                    << "uncommitted records will be delivered again): " << FormatError(s) << "\n";
        }
      }
    }
    if (!written.ok()) {
      if (!written.is(CliErrc::kBrokenPipe)) code = Fail("", written);
      break;
    }
    if (code != kExitOk || (*limit > 0 && printed >= *limit)) break;
  }
  if (commit && code == kExitOk) {
    if (Status s = committer.Commit(); !s.ok()) code = Fail("commit to " + what, s);
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
