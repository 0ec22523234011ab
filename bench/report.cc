#include "rdmq/bench/report.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "progress.h"
#include "rdmq/bench/sysinfo.h"

namespace rdmq::bench {

using nlohmann::json;

namespace {

std::string PercentileKey(double p) {
  std::ostringstream os;
  os << "p" << p;
  std::string k = os.str();
  for (char& c : k) {
    if (c == '.') c = '_';
  }
  return k;  // p50, p99, p99_9, p99_99
}

double Us(uint64_t ns) { return static_cast<double>(ns) / 1e3; }

double FractionOf(double rate, double reference) { return reference > 0 ? rate / reference : 0; }

std::string FormatUs(double us) {
  char buf[32];
  if (us <= 0) return "-";
  if (us < 10) {
    std::snprintf(buf, sizeof(buf), "%.2f", us);
  } else if (us < 1000) {
    std::snprintf(buf, sizeof(buf), "%.1f", us);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f", us);
  }
  return buf;
}

std::string WorkloadName(const Workload& w) {
  std::ostringstream os;
  os << w.message_size << " B";
  if (w.count != 0) {
    os << " x " << Human(static_cast<double>(w.count) * w.producers);
  } else {
    os << " for " << static_cast<double>(w.duration.count()) / 1000.0 << " s";
  }
  os << ", " << w.producers << "P/" << w.consumers << "C, " << w.partitions << " part, window " << w.window;
  if (w.rate > 0) os << ", " << Human(w.rate) << "/s";
  return os.str();
}

json CpuJson(const CpuTime& c, double elapsed) {
  return {{"user_s", c.user_s}, {"sys_s", c.sys_s}, {"cores", elapsed > 0 ? c.total() / elapsed : 0}};
}

}  // namespace

json HistogramJson(const LogHistogram& h) {
  json j = {{"count", h.count()}, {"min", h.min()}, {"mean", h.mean()}, {"max", h.max()}};
  for (double p : kPercentiles) j[PercentileKey(p)] = h.Percentile(p);
  return j;
}

json ReportJson(const Report& r) {
  const Workload& w = r.workload;
  const MachineInfo m = ReadMachineInfo();
  json j;
  j["version"] = 1;
  j["system"] = w.system;
  j["description"] = r.system_description;
  j["label"] = w.label;
  j["durability"] = w.durability;
  j["machine"] = {{"cpu", m.cpu_model},
                  {"cpus", m.cpus},
                  {"memory_gib", m.memory_gib},
                  {"kernel", m.kernel},
                  {"host", m.hostname}};
  j["workload"] = {{"name", WorkloadName(w)},
                   {"producers", w.producers},
                   {"consumers", w.consumers},
                   {"fanout", w.fanout},
                   {"processes", w.processes},
                   {"message_size", w.message_size},
                   {"count_per_producer", w.count},
                   {"duration_ms", w.duration.count()},
                   {"batch_size", w.batch_size},
                   {"linger_us", w.linger.count()},
                   {"acks", w.acks},
                   {"partitions", w.partitions},
                   {"replication_factor", w.replication_factor},
                   {"mode", w.mode},
                   {"fabric", w.fabric},
                   {"window", w.window},
                   {"rate", w.rate},
                   {"address", w.address},
                   {"producer_settings", w.producer_settings},
                   {"consumer_settings", w.consumer_settings},
                   {"topic", w.topic}};
  j["counts"] = {{"sent", r.sent},
                 {"acked", r.acked},
                 {"ack_errors", r.ack_errors},
                 {"consumed", r.consumed},
                 {"expected", r.expected},
                 {"missing", r.missing},
                 {"duplicates", r.duplicates},
                 {"corrupt", r.corrupt}};
  j["produce"] = {{"seconds", r.produce_s},
                  {"records_per_s", r.produce_records_per_s()},
                  {"mb_per_s", r.produce_mb_per_s()}};
  j["consume"] = {{"seconds", r.consume_s},
                  {"records_per_s", r.consume_records_per_s()},
                  {"mb_per_s", r.consume_mb_per_s()},
                  {"per_consumer_records_per_s", r.consumer_records_per_s}};
  j["latency_ns"] = {{"ack", HistogramJson(r.ack_latency)},
                     {"e2e", HistogramJson(r.e2e_latency)},
                     {"sample_every", r.latency_sample_every}};
  // --vs-mem: the harness's reference on the same workload in the same invocation.
  j["vs_mem"] =
      r.mem_produce_records_per_s > 0
          ? json{{"produce_records_per_s", r.mem_produce_records_per_s},
                 {"consume_records_per_s", r.mem_consume_records_per_s},
                 {"produce_fraction", FractionOf(r.produce_records_per_s(), r.mem_produce_records_per_s)},
                 {"consume_fraction", FractionOf(r.consume_records_per_s(), r.mem_consume_records_per_s)}}
          : json(nullptr);
  // Cores = CPU seconds over the elapsed time, from the start signal until every worker was
  // seen done (within a few milliseconds); teardown is not included in either.
  j["cpu"] = {{"elapsed_s", r.elapsed_s},
              {"server_pid", r.server_pid},
              {"server", r.server_cpu_known ? CpuJson(r.server_cpu, r.elapsed_s) : json(nullptr)},
              {"clients", CpuJson(r.client_cpu, r.elapsed_s)},
              {"client_max_process_cores", r.client_max_process_cores},
              {"producer_max_process_cores", r.producer_max_process_cores},
              {"consumer_max_process_cores", r.consumer_max_process_cores}};
  j["load"] = {{"before", r.load_before}, {"after", r.load_after}};
  json tl = json::array();
  for (const Sample& s : r.timeline) {
    tl.push_back({s.t_s, s.acked, s.consumed, s.produce_rate, s.consume_rate});
  }
  j["timeline_columns"] = {"t_s", "acked", "consumed", "produce_per_s", "consume_per_s"};
  j["timeline"] = std::move(tl);
  j["interrupted"] = r.interrupted;
  j["first_error"] = r.first_error;
  j["ok"] = r.CountsOk();
  return j;
}

Status WriteJson(const json& j, const std::string& path) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return Status::FromErrno(errno, "open " + path + " for writing");
  out << j.dump(2) << "\n";
  out.close();
  if (!out) return Status::FromErrno(errno, "write " + path);
  return Status::Ok();
}

Result<json> ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::FromErrno(errno, "open " + path);
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status(Errc::kCorruption, path + ": not valid JSON");
  return j;
}

void PrintSummary(const Report& r, std::FILE* out) {
  const Workload& w = r.workload;
  std::fprintf(out, "system     %s%s%s\n", r.system_description.c_str(), w.label.empty() ? "" : " | ",
               w.label.c_str());
  std::fprintf(out, "workload   %s, %s, acks=%d, batch %u B, linger %lld us%s\n", WorkloadName(w).c_str(),
               w.processes ? "processes" : "threads", w.acks, w.batch_size,
               static_cast<long long>(w.linger.count()),
               w.system == "rdmq" ? (", " + w.mode + ", " + w.fabric + ", " + w.durability).c_str() : "");
  std::fprintf(out, "produce    %llu records in %.3f s: %s records/s, %.1f MB/s\n",
               static_cast<unsigned long long>(r.acked), r.produce_s,
               Human(r.produce_records_per_s()).c_str(), r.produce_mb_per_s());
  if (w.consumers > 0) {
    std::fprintf(out, "consume    %llu records in %.3f s: %s records/s, %.1f MB/s%s\n",
                 static_cast<unsigned long long>(r.consumed), r.consume_s,
                 Human(r.consume_records_per_s()).c_str(), r.consume_mb_per_s(),
                 w.fanout ? " (all consumers together, from when they began)" : "");
  }
  if (r.consumer_records_per_s.size() > 1) {
    std::vector<double> rates = r.consumer_records_per_s;
    std::sort(rates.begin(), rates.end());
    std::fprintf(out, "consumers  each: min %s, median %s, max %s records/s (%zu consumers)\n",
                 Human(rates.front()).c_str(), Human(rates[rates.size() / 2]).c_str(),
                 Human(rates.back()).c_str(), rates.size());
  }
  auto lat = [&](const char* name, const LogHistogram& h) {
    if (h.count() == 0) return;
    std::fprintf(out, "%-10s p50 %s  p99 %s  p99.9 %s  max %s us  (%llu samples)\n", name,
                 FormatUs(Us(h.Percentile(50))).c_str(), FormatUs(Us(h.Percentile(99))).c_str(),
                 FormatUs(Us(h.Percentile(99.9))).c_str(), FormatUs(Us(h.max())).c_str(),
                 static_cast<unsigned long long>(h.count()));
  };
  lat("ack", r.ack_latency);
  lat("e2e", r.e2e_latency);
  if (r.latency_sample_every > 1 && (r.ack_latency.count() != 0 || r.e2e_latency.count() != 0)) {
    std::fprintf(out, "sampled    latencies of 1 record in %u (pseudo-random); every record is checked\n",
                 r.latency_sample_every);
  }
  if (r.mem_produce_records_per_s > 0) {
    std::fprintf(out, "vs mem     produce %.2f of mem's %s records/s",
                 FractionOf(r.produce_records_per_s(), r.mem_produce_records_per_s),
                 Human(r.mem_produce_records_per_s).c_str());
    if (w.consumers > 0) {
      std::fprintf(out, ", consume %.2f of mem's %s records/s",
                   FractionOf(r.consume_records_per_s(), r.mem_consume_records_per_s),
                   Human(r.mem_consume_records_per_s).c_str());
    }
    std::fprintf(out, " (same workload, same invocation)\n");
  }
  const double active = std::max(r.elapsed_s, 1e-9);
  if (r.server_cpu_known) {
    std::fprintf(out, "cpu        server (pid %d) %.2f s user + %.2f s sys = %.2f cores;", r.server_pid,
                 r.server_cpu.user_s, r.server_cpu.sys_s, r.server_cpu.total() / active);
  } else {
    std::fprintf(out, "cpu        server n/a;");
  }
  std::fprintf(out, " clients %.2f s user + %.2f s sys = %.2f cores", r.client_cpu.user_s, r.client_cpu.sys_s,
               r.client_cpu.total() / active);
  if (r.producer_max_process_cores >= 0) {
    std::fprintf(out, " (busiest producer process %.2f, consumer process %.2f)", r.producer_max_process_cores,
                 std::max(0.0, r.consumer_max_process_cores));
  }
  std::fprintf(out, ", over %.2f s\n", active);
  std::fprintf(out, "load       %.2f before, %.2f after (1-min average, %d CPUs)\n", r.load_before[0],
               r.load_after[0], ReadMachineInfo().cpus);
  std::fprintf(out,
               "check      %s: sent %llu, acked %llu, ack errors %llu, consumed %llu of %llu, missing %llu, "
               "duplicates %llu, corrupt %llu%s\n",
               r.CountsOk() ? "OK" : "FAILED", static_cast<unsigned long long>(r.sent),
               static_cast<unsigned long long>(r.acked), static_cast<unsigned long long>(r.ack_errors),
               static_cast<unsigned long long>(r.consumed), static_cast<unsigned long long>(r.expected),
               static_cast<unsigned long long>(r.missing), static_cast<unsigned long long>(r.duplicates),
               static_cast<unsigned long long>(r.corrupt), r.interrupted ? " (interrupted)" : "");
  if (!r.first_error.empty()) std::fprintf(out, "first error %s\n", r.first_error.c_str());
}

Status WritePlot(const Report& r, const std::string& png_path) {
  const std::string dat = png_path + ".dat";
  const std::string lat = png_path + ".lat.dat";
  const std::string gp = png_path + ".gp";
  {
    std::ofstream out(dat, std::ios::trunc);
    if (!out) return Status::FromErrno(errno, "open " + dat);
    out << "# t_s produce_records_per_s consume_records_per_s\n";
    for (const Sample& s : r.timeline) out << s.t_s << " " << s.produce_rate << " " << s.consume_rate << "\n";
  }
  {
    // The percentile spectrum: x = 1/(1-p) on a log axis, so p50, p90, p99, p99.9 are evenly spaced.
    std::ofstream out(lat, std::ios::trunc);
    if (!out) return Status::FromErrno(errno, "open " + lat);
    out << "# percentile inverse_tail ack_us e2e_us\n";
    // Each point's tail is the previous one's divided by 1.2: p_k = 100 - 100 / 1.2^k.
    double tail = 100;
    for (int k = 0; k < 200 && 100 - tail < 99.9999; ++k, tail /= 1.2) {
      const double p = 100 - tail;
      out << p << " " << 100 / (100 - p) << " "
          << (r.ack_latency.count() ? Us(r.ack_latency.Percentile(p)) : NAN) << " "
          << (r.e2e_latency.count() ? Us(r.e2e_latency.Percentile(p)) : NAN) << "\n";
    }
  }
  const Workload& w = r.workload;
  std::string title = w.system + (w.label.empty() ? "" : " (" + w.label + ")") + ": " + WorkloadName(w);
  for (char& c : title) {
    if (c == '"') c = '\'';
  }
  {
    std::ofstream out(gp, std::ios::trunc);
    if (!out) return Status::FromErrno(errno, "open " + gp);
    out << "set terminal pngcairo size 1200,500 font 'sans,10'\n"
        << "set output '" << png_path << "'\n"
        << "set multiplot layout 1,2 title \"" << title << "\"\n"
        << "set datafile missing 'nan'\n"
        << "set grid\n"
        << "set title 'throughput over time'\nset xlabel 'seconds'\nset ylabel 'records/s'\n"
        << "set format y '%.1s%c'\nset yrange [0:*]\n"
        << "plot '" << dat << "' using 1:2 with lines lw 2 title 'produced (acked)', "
        << "'' using 1:3 with lines lw 2 title 'consumed'\n"
        << "set title 'latency percentiles'\nset xlabel 'percentile'\nset ylabel 'microseconds'\n"
        << "set logscale x\nset logscale y\nset format y '%g'\nset yrange [*:*]\n"
        << "set xtics ('50' 2, '90' 10, '99' 100, '99.9' 1000, '99.99' 10000, '99.999' 100000)\n"
        << "set key bottom right\n"
        << "plot '" << lat << "' using 2:3 with lines lw 2 title 'produce to ack', "
        << "'' using 2:4 with lines lw 2 title 'produce to consume'\n"
        << "unset multiplot\n";
  }
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    return Status(Errc::kUnavailable,
                  "gnuplot is not installed (deploy/install-deps.sh installs gnuplot-nox); "
                  "the plot's data and script are in " +
                      dat + " and " + gp);
  }
  const std::string cmd = "gnuplot '" + gp + "' 2>&1";
  std::FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return Status::FromErrno(errno, "run " + cmd);
  std::string output;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p) != nullptr) output += buf;
  const int rc = pclose(p);
  if (rc != 0) return Status(Errc::kInternal, "gnuplot " + gp + " failed: " + output);
  return Status::Ok();
}

namespace {
// j[key] if it is an object, else an empty object (const json's operator[] must not miss).
const json& Obj(const json& j, const char* key) {
  static const json empty = json::object();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}
}  // namespace

TableRow RowFromJson(const json& j) {
  // Result files come from disk: every field may be missing or of the wrong type.
  auto str = [](const json& o, const char* key, const char* fallback) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
  };
  auto num = [](const json& o, const char* key, double fallback) {
    auto it = o.find(key);
    return it != o.end() && it->is_number() ? it->get<double>() : fallback;
  };
  const json& top = j.is_object() ? j : Obj(j, "");
  TableRow row;
  row.name = str(top, "system", "?");
  row.durability = str(top, "label", "");
  if (row.durability.empty()) row.durability = str(top, "durability", "");
  row.workload = str(Obj(top, "workload"), "name", "?");
  row.records_per_s = num(Obj(top, "produce"), "records_per_s", 0);
  row.mb_per_s = num(Obj(top, "produce"), "mb_per_s", 0);
  row.consume_records_per_s = num(Obj(top, "consume"), "records_per_s", 0);
  const json& lat = Obj(top, "latency_ns");
  row.ack_p50_us = num(Obj(lat, "ack"), "p50", 0) / 1e3;
  row.ack_p99_us = num(Obj(lat, "ack"), "p99", 0) / 1e3;
  row.e2e_p50_us = num(Obj(lat, "e2e"), "p50", 0) / 1e3;
  row.e2e_p99_us = num(Obj(lat, "e2e"), "p99", 0) / 1e3;
  const json& cpu = Obj(top, "cpu");
  row.server_cores = num(Obj(cpu, "server"), "cores", -1);
  row.client_cores = num(Obj(cpu, "clients"), "cores", 0);
  auto ok = top.find("ok");
  row.ok = ok != top.end() && ok->is_boolean() && ok->get<bool>();
  // The durability class used for "like with like" ratios.
  row.klass = str(top, "durability", "durable");
  return row;
}

namespace {

struct Cell {
  std::vector<std::string> cols;
};

// Rows grouped by workload, in first-seen order, each with its ratio text.
std::vector<std::pair<std::string, std::vector<Cell>>> BuildTable(const std::vector<TableRow>& rows,
                                                                  const std::string& reference) {
  std::vector<std::pair<std::string, std::vector<Cell>>> groups;
  std::map<std::string, size_t> index;
  for (const TableRow& r : rows) {
    if (!index.count(r.workload)) {
      index[r.workload] = groups.size();
      groups.push_back({r.workload, {}});
    }
  }
  char buf[64];
  for (const TableRow& r : rows) {
    const TableRow* ref = nullptr;
    for (const TableRow& c : rows) {
      if (c.workload == r.workload && c.name == reference && c.klass == r.klass) {
        ref = &c;
        break;
      }
    }
    Cell cell;
    cell.cols.push_back(r.name);
    cell.cols.push_back(r.durability);
    cell.cols.push_back(Human(r.records_per_s));
    std::snprintf(buf, sizeof(buf), "%.1f", r.mb_per_s);
    cell.cols.push_back(buf);
    cell.cols.push_back(FormatUs(r.ack_p50_us));
    cell.cols.push_back(FormatUs(r.ack_p99_us));
    cell.cols.push_back(FormatUs(r.e2e_p50_us));
    cell.cols.push_back(FormatUs(r.e2e_p99_us));
    if (r.server_cores >= 0) {
      std::snprintf(buf, sizeof(buf), "%.2f", r.server_cores);
      cell.cols.push_back(buf);
    } else {
      cell.cols.push_back("-");
    }
    std::snprintf(buf, sizeof(buf), "%.2f", r.client_cores);
    cell.cols.push_back(buf);
    if (ref == nullptr) {
      cell.cols.push_back("n/a");
    } else if (ref == &r) {
      cell.cols.push_back("reference");
    } else {
      std::string ratio;
      if (r.records_per_s > 0) {
        std::snprintf(buf, sizeof(buf), "%.1fx rate", ref->records_per_s / r.records_per_s);
        ratio = buf;
      }
      if (ref->ack_p50_us > 0 && r.ack_p50_us > 0) {
        std::snprintf(buf, sizeof(buf), ", %.1fx p50", r.ack_p50_us / ref->ack_p50_us);
        ratio += buf;
      }
      cell.cols.push_back(ratio);
    }
    cell.cols.push_back(r.ok ? "ok" : "COUNTS WRONG");
    groups[index[r.workload]].second.push_back(std::move(cell));
  }
  return groups;
}

const std::vector<std::string> kHeader = {"system",       "durability",   "records/s",   "MB/s",
                                          "ack p50",      "ack p99",      "e2e p50",     "e2e p99",
                                          "server cores", "client cores", "ref vs this", "check"};

}  // namespace

void PrintTable(const std::vector<TableRow>& rows, const std::string& reference, std::FILE* out) {
  const auto groups = BuildTable(rows, reference);
  std::vector<size_t> width(kHeader.size());
  for (size_t i = 0; i < kHeader.size(); ++i) width[i] = kHeader[i].size();
  for (const auto& g : groups) {
    for (const Cell& c : g.second) {
      for (size_t i = 0; i < c.cols.size(); ++i) width[i] = std::max(width[i], c.cols[i].size());
    }
  }
  auto line = [&](const std::vector<std::string>& cols) {
    for (size_t i = 0; i < cols.size(); ++i) {
      // Text columns left-aligned, numbers right-aligned.
      const bool left = i < 2 || i >= 10;
      std::fprintf(out, left ? "%-*s  " : "%*s  ", static_cast<int>(width[i]), cols[i].c_str());
    }
    std::fprintf(out, "\n");
  };
  std::fprintf(out,
               "latencies in microseconds; 'ref vs this': %s's rate / this rate, this p50 / %s's p50, "
               "against the %s row of the same durability class\n",
               reference.c_str(), reference.c_str(), reference.c_str());
  for (const auto& g : groups) {
    std::fprintf(out, "\n== %s\n", g.first.c_str());
    line(kHeader);
    for (const Cell& c : g.second) line(c.cols);
  }
}

void PrintMarkdownTable(const std::vector<TableRow>& rows, const std::string& reference, std::FILE* out) {
  const auto groups = BuildTable(rows, reference);
  for (const auto& g : groups) {
    std::fprintf(out, "\n**%s**\n\n|", g.first.c_str());
    for (const auto& h : kHeader) std::fprintf(out, " %s |", h.c_str());
    std::fprintf(out, "\n|");
    for (size_t i = 0; i < kHeader.size(); ++i) std::fprintf(out, "%s", i < 2 || i >= 10 ? "---|" : "---:|");
    std::fprintf(out, "\n");
    for (const Cell& c : g.second) {
      std::fprintf(out, "|");
      for (const auto& col : c.cols) std::fprintf(out, " %s |", col.c_str());
      std::fprintf(out, "\n");
    }
  }
}

}  // namespace rdmq::bench
