#include "admin_common.h"

#include <iostream>

namespace rdmq::cli::admin {

const std::vector<OptionSpec>& GlobalOptions() {
  static const std::vector<OptionSpec> kGlobal = {
      {"broker", 'b', "ADDR",
       "broker control address: unix:PATH (shm), tcp:HOST:PORT, verbs:HOST:PORT\n"
       "(default: $RDMQ_BROKER, else unix:./rdmq-data/rdmq.sock)"},
      {"json", 0, "", "print JSON (stable field names) instead of tables"},
      {"timeout", 0, "MS", "request timeout in milliseconds (default 30000)"},
      {"client-config", 'X', "KEY=VALUE",
       "client setting (client.id, request.timeout.ms, rdma.device, sasl.username, ...;\n"
       "`rdmq config list client`); repeatable",
       true},
  };
  return kGlobal;
}

std::vector<OptionSpec> WithGlobals(std::vector<OptionSpec> own) {
  for (const auto& g : GlobalOptions()) own.push_back(g);
  return own;
}

CommandSpec CommandGroup::Spec() const {
  CommandSpec s;
  s.path = "rdmq " + name;
  s.usage = "<command> [options]";
  s.summary = summary;
  s.options = GlobalOptions();
  for (const auto& sc : subcommands) {
    s.subcommands.emplace_back(sc.spec.path.substr(s.path.size() + 1), sc.spec.summary);
  }
  s.examples.push_back("rdmq " + name + " " + subcommands.front().spec.path.substr(s.path.size() + 1) +
                       " --help");
  return s;
}

int Fail(const std::string& what, const Status& s) {
  std::cerr << "rdmq: " << what << ": " << FormatError(s) << "\n";
  return kExitError;
}

int Usage(const Status& s) {
  std::cerr << "rdmq: " << FormatError(s) << "\n";
  return kExitUsage;
}

Result<client::ClientOptions> ClientOptionsFrom(const ParsedArgs& a) {
  client::ClientOptions o;
  o.client_name = "rdmq-cli";
  for (const auto& kv : a.GetAll("client-config")) {
    RDMQ_ASSIGN_OR_RETURN(auto p, ParseKeyValue(kv, "-X"));
    if (Status s = o.Set(p.first, p.second); !s.ok()) return UsageError("-X " + kv + ": " + FormatError(s));
  }
  if (auto b = a.Get("broker")) o.bootstrap = *b;
  RDMQ_ASSIGN_OR_RETURN(int64_t timeout, a.GetInt("timeout", o.request_timeout.count(), 1, 3'600'000));
  o.request_timeout = std::chrono::milliseconds(timeout);
  return o;
}

std::unique_ptr<client::AdminClient> Connect(const ParsedArgs& a, int* code) {
  auto opts = ClientOptionsFrom(a);
  if (!opts.ok()) {
    *code = Usage(opts.status());
    return nullptr;
  }
  auto admin = client::AdminClient::Connect(*opts);
  if (!admin.ok()) {
    *code = Fail("cannot reach the broker at " + opts->ResolvedBootstrap(), admin.status());
    return nullptr;
  }
  return std::move(*admin);
}

nlohmann::ordered_json PartitionJson(const client::PartitionDescription& p) {
  nlohmann::ordered_json j;
  j["partition"] = p.partition;
  j["log_start_offset"] = p.log_start_offset;
  j["high_watermark"] = p.high_watermark;
  j["records"] = p.high_watermark - p.log_start_offset;
  j["segments"] = p.segments;
  j["bytes"] = p.bytes;
  j["active_segment_base"] = p.active_segment_base;
  j["exclusive_lease"] = p.exclusive_lease;
  j["leader"] = p.leader;
  j["leader_epoch"] = p.leader_epoch;
  j["replicas"] = p.replicas;
  j["isr"] = p.isr;
  j["local"] = p.local;
  return j;
}

std::string Ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s.empty() ? "-" : s;
}

std::string OrDash(int64_t v) { return v < 0 ? "-" : std::to_string(v); }

std::string LocalNum(const client::PartitionDescription& p, int64_t v) {
  return p.local ? std::to_string(v) : "-";
}

}  // namespace rdmq::cli::admin
