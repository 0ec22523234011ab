// Command-line options made from a config table: names, flags, short forms, help, and values
// applied through the table with errors that name the option.
#include "rdmq/config/options.h"

#include <catch2/catch.hpp>

#include "support/test_util.h"

namespace rdmq::config {
namespace {

struct Tool {
  uint32_t size = 100;
  bool procs = false;
  std::string fabric = "shm";
  std::chrono::milliseconds duration{0};
};

const ConfigDef<Tool>& ToolDef() {
  static const auto* def = [] {
    auto* d = new ConfigDef<Tool>("tool");
    d->Define({.name = "size",
               .type = Type::kBytes,
               .doc = "Record size.",
               .component = "tool",
               .min = 16,
               .max = 1 << 20},
              Field(&Tool::size));
    d->Define({.name = "procs", .type = Type::kBool, .doc = "Processes.", .component = "tool"},
              Field(&Tool::procs));
    d->Define({.name = "fabric",
               .type = Type::kEnum,
               .doc = "The fabric.",
               .component = "tool",
               .choices = {{"shm", 0}, {"tcp", 1}}},
              Field(&Tool::fabric));
    d->Define({.name = "duration",
               .type = Type::kDuration,
               .doc = "How long.",
               .component = "tool",
               .min = 0,
               .max = 3600,
               .unit = Unit::kSeconds,
               .fractions = true},
              Field(&Tool::duration));
    return d;
  }();
  return *def;
}

CommandSpec ToolSpec() {
  CommandSpec spec{.path = "tool", .options = OptionsFromKeys(ToolDef().Describe(), {{"size", 's'}})};
  spec.options.push_back({"extra", 0, "X", "not a key"});
  return spec;
}

TEST_CASE("options made from a table: one per key, flags for bools, help with accepted values and default",
          "[config]") {
  const std::vector<OptionSpec> opts = OptionsFromKeys(ToolDef().Describe(), {{"size", 's'}});
  REQUIRE(opts.size() == 4);
  CHECK(opts[0].name == "size");
  CHECK(opts[0].short_name == 's');
  CHECK(opts[0].value_name == "BYTES");
  CHECK(opts[0].help == "Record size; default 100");
  CHECK(opts[1].name == "procs");
  CHECK(opts[1].value_name.empty());  // a flag
  CHECK(opts[1].short_name == 0);
  CHECK(opts[2].help == "The fabric (shm or tcp); default shm");
  CHECK(opts[3].value_name == "SECONDS");
  const std::string help = ToolSpec().HelpText();
  CHECK(help.find("-s, --size BYTES") != std::string::npos);
}

TEST_CASE("ApplyOptions sets every option that names a key, in the table's syntax", "[config]") {
  const std::vector<std::string> words = {"-s",         "1KiB", "--procs", "--fabric=tcp",
                                          "--duration", "0.5",  "--extra", "x"};
  auto args = ToolSpec().Parse(words);
  REQUIRE_OK(args.status());
  Tool t;
  REQUIRE_OK(ApplyOptions(ToolDef(), *args, &t));
  CHECK(t.size == 1024);
  CHECK(t.procs);
  CHECK(t.fabric == "tcp");
  CHECK(t.duration == std::chrono::milliseconds(500));
  CHECK(args->GetOr("extra", "") == "x");  // left to the caller
}

TEST_CASE("a bad option value names the option, the value and what is accepted, nothing is set", "[config]") {
  for (const auto& [words, expected] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--procs", "--size", "8"}, "--size 8: must be a byte count in [16, 1 MiB]"},
           {{"--procs", "--fabric", "rdma"}, "--fabric rdma: must be shm or tcp"},
           {{"--procs", "--duration", "-1"}, "--duration -1: must be"}}) {
    INFO(expected);
    auto args = ToolSpec().Parse(words);
    REQUIRE_OK(args.status());
    Tool t;
    const Status s = ApplyOptions(ToolDef(), *args, &t);
    CHECK(s.is(Errc::kInvalidArgument));
    CHECK(std::string(s.context()).find(expected) != std::string::npos);
    CHECK_FALSE(t.procs);  // the target is unchanged, even by the options before the bad one
    CHECK(t.size == 100);
  }
}

}  // namespace
}  // namespace rdmq::config
