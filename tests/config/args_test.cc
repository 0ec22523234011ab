// What config/args.h adds for rdmq-broker, the benchmarks and the examples (the parser itself is
// tested through the tools' facade in tests/cli/args_test.cc).
#include "rdmq/config/args.h"

#include <catch2/catch.hpp>

#include "support/test_util.h"

namespace rdmq::config {
namespace {

const CommandSpec& Spec() {
  static const CommandSpec spec{.path = "tool",
                                .usage = "[options]",
                                .summary = "A tool.",
                                .options = {{"config", 'c', "FILE", "a file", true},
                                            {"set", 0, "KEY=VALUE", "a setting", true},
                                            {"rate", 0, "N", "a rate"},
                                            {"quick", 0, "", "a flag"}},
                                .settings_title = "Settings",
                                .settings = "  key  (int, default 1)\n"};
  return spec;
}

TEST_CASE("values() keeps every option in command-line order", "[config][args]") {
  const std::vector<std::string> words = {"--set", "a=1", "-c", "f.json", "--quick", "--set=b=2"};
  auto a = Spec().Parse(words);
  REQUIRE_OK(a);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"set", "a=1"}, {"config", "f.json"}, {"quick", ""}, {"set", "b=2"}};
  CHECK(a->values() == want);
}

TEST_CASE("GetDouble reads decimals in range and names the option otherwise", "[config][args]") {
  const std::vector<std::string> ok = {"--rate", "2.5"};
  auto a = Spec().Parse(ok);
  REQUIRE_OK(a);
  CHECK(a->GetDouble("rate", 0, 0, 10).value() == 2.5);
  CHECK(a->GetDouble("missing", 7, 0, 10).value() == 7);
  CHECK(a->GetDouble("rate", 0, 3, 10).status().context() == "--rate: 2.5 is out of range [3, 10]");
  const std::vector<std::string> bad = {"--rate", "fast"};
  auto b = Spec().Parse(bad);
  REQUIRE_OK(b);
  Status s = b->GetDouble("rate", 0, 0, 10).status();
  CHECK(s.is(ConfigErrc::kUsage));
  CHECK(s.context() == "--rate: 'fast' is not a number");
}

TEST_CASE("ParseCommandLine returns the arguments, or the exit status for help and errors",
          "[config][args]") {
  int exit_code = -1;
  const std::vector<std::string> ok = {"--quick"};
  auto a = ParseCommandLine(Spec(), ok, &exit_code);
  REQUIRE(a.has_value());
  CHECK(a->Has("quick"));
  const std::vector<std::string> bad = {"--bogus"};
  CHECK(!ParseCommandLine(Spec(), bad, &exit_code).has_value());
  CHECK(exit_code == 2);
  const std::vector<std::string> help = {"--help"};
  CHECK(!ParseCommandLine(Spec(), help, &exit_code).has_value());
  CHECK(exit_code == 0);
}

TEST_CASE("help shows the settings block after the options", "[config][args]") {
  const std::string help = Spec().HelpText();
  const size_t options = help.find("Options:");
  const size_t settings = help.find("Settings:\n  key  (int, default 1)");
  REQUIRE(options != std::string::npos);
  REQUIRE(settings != std::string::npos);
  CHECK(options < settings);
}

}  // namespace
}  // namespace rdmq::config
