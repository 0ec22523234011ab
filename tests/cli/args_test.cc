#include "rdmq/cli/args.h"

#include "rdmq/cli/output.h"
#include "support/test_util.h"

namespace rdmq::cli {
namespace {

CommandSpec Spec() {
  CommandSpec s;
  s.path = "rdmq topic create";
  s.usage = "NAME [options]";
  s.summary = "Create a topic.";
  s.options = {{"partitions", 'p', "N", "number of partitions"},
               {"config", 'c', "KEY=VALUE", "a topic config\nrepeatable", true},
               {"json", 0, "", "JSON output"},
               {"verbose", 'v', "", "more output"}};
  s.examples = {"rdmq topic create orders -p 3"};
  s.min_positional = 1;
  s.max_positional = 1;
  return s;
}

Result<ParsedArgs> Parse(std::vector<std::string> words) { return Spec().Parse(words); }

TEST_CASE("options in every spelling, anywhere on the line", "[cli][args]") {
  for (const auto& words : std::vector<std::vector<std::string>>{
           {"orders", "--partitions", "3"},
           {"--partitions=3", "orders"},
           {"-p", "3", "orders"},
           {"orders", "-p3"},
       }) {
    auto a = Parse(words);
    REQUIRE_OK(a);
    CHECK(a->positional() == std::vector<std::string>{"orders"});
    CHECK(a->Get("partitions") == "3");
    auto n = a->GetInt("partitions", 1, 1, 4096);
    REQUIRE_OK(n);
    CHECK(*n == 3);
    CHECK_FALSE(a->Has("json"));
  }
}

TEST_CASE("repeated options keep their order, flags take no value", "[cli][args]") {
  auto a = Parse({"t", "-c", "a=1", "--config=b=2=3", "--json", "-v"});
  REQUIRE_OK(a);
  CHECK(a->GetAll("config") == std::vector<std::string>{"a=1", "b=2=3"});
  CHECK(a->Has("json"));
  CHECK(a->Has("verbose"));
  CHECK(a->GetOr("partitions", "7") == "7");
  auto n = a->GetInt("partitions", 9, 1, 10);
  REQUIRE_OK(n);
  CHECK(*n == 9);
}

TEST_CASE("a double dash ends the options", "[cli][args]") {
  auto a = Parse({"--", "-p"});
  REQUIRE_OK(a);
  CHECK(a->positional() == std::vector<std::string>{"-p"});
  CHECK_FALSE(a->Has("partitions"));
  // A lone "-" is a positional argument (stdin, by convention).
  CHECK(Parse({"-"})->positional() == std::vector<std::string>{"-"});
}

TEST_CASE("usage errors name the option and point to --help", "[cli][args]") {
  struct Case {
    std::vector<std::string> words;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {{"t", "--bogus"}, "unknown option '--bogus'"},
           {{"t", "-z"}, "unknown option '-z'"},
           {{"t", "--partitions"}, "option --partitions needs a value (N)"},
           {{"t", "-p", "1", "-p", "2"}, "option --partitions given twice"},
           {{"t", "--json=yes"}, "option --json takes no value"},
           {{}, "missing argument: usage: rdmq topic create NAME [options]"},
           {{"a", "b"}, "unexpected argument 'b'"},
       }) {
    auto a = Parse(c.words);
    INFO(c.expect);
    REQUIRE_FALSE(a.ok());
    CHECK(a.status().is(config::ConfigErrc::kUsage));
    CHECK(a.status().is(Errc::kInvalidArgument));
    const std::string msg = FormatError(a.status());
    CHECK(msg.find(c.expect) != std::string::npos);
    CHECK(msg.find("see 'rdmq topic create --help'") != std::string::npos);
  }
}

TEST_CASE("help wins: no positional checks, unknown options ignored", "[cli][args]") {
  for (const auto& words : std::vector<std::vector<std::string>>{
           {"--help"}, {"-h"}, {"a", "b", "c", "--help"}, {"--help", "--bogus"}}) {
    auto a = Parse(words);
    REQUIRE_OK(a);
    CHECK(a->help());
  }
  const std::string help = Spec().HelpText();
  CHECK(help.find("Usage: rdmq topic create NAME [options]") == 0);
  CHECK(help.find("-p, --partitions N") != std::string::npos);
  CHECK(help.find("--json") != std::string::npos);
  CHECK(help.find("-h, --help") != std::string::npos);
  CHECK(help.find("Examples:\n  rdmq topic create orders -p 3") != std::string::npos);
  // The second line of a multi-line option help is indented under the first.
  CHECK(help.find("a topic config\n") != std::string::npos);
  CHECK(help.find("  repeatable\n") != std::string::npos);
}

TEST_CASE("integer options are range checked", "[cli][args]") {
  auto bad = [](std::vector<std::string> w, std::string expect) {
    auto a = Parse(std::move(w));
    REQUIRE_OK(a);
    auto n = a->GetInt("partitions", 1, 1, 4096);
    REQUIRE_FALSE(n.ok());
    INFO(FormatError(n.status()));
    CHECK(FormatError(n.status()).find(expect) != std::string::npos);
  };
  bad({"t", "-p", "0"}, "--partitions: 0 is out of range [1, 4096]");
  bad({"t", "-p", "5000"}, "out of range");
  bad({"t", "-p", "3x"}, "--partitions: '3x' is not an integer");
  bad({"t", "-p", ""}, "is not an integer");
  bad({"t", "-p", " 3"}, "is not an integer");
  bad({"t", "-p", "99999999999999999999999"}, "out of range");
  auto v = ParseInt("+12", "x", 0, 100);
  REQUIRE_OK(v);
  CHECK(*v == 12);
  v = ParseInt("-12", "x", -100, 100);
  REQUIRE_OK(v);
  CHECK(*v == -12);
}

TEST_CASE("key=value and escapes", "[cli][args]") {
  auto kv = ParseKeyValue("retention.ms=1000", "--config");
  REQUIRE_OK(kv);
  CHECK(kv->first == "retention.ms");
  CHECK(kv->second == "1000");
  kv = ParseKeyValue("a==b", "-H");
  REQUIRE_OK(kv);
  CHECK(kv->second == "=b");
  kv = ParseKeyValue("k=", "-H");
  REQUIRE_OK(kv);
  CHECK(kv->second.empty());
  CHECK_FALSE(ParseKeyValue("novalue", "-H").ok());
  CHECK(FormatError(ParseKeyValue("=v", "-H").status()) == "-H: '=v' has an empty key");

  auto u = Unescape(R"(a\tb\n\\\x41\0)", "-K");
  REQUIRE_OK(u);
  CHECK(*u == std::string("a\tb\n\\A\0", 7));
  CHECK_FALSE(Unescape(R"(\q)", "-K").ok());
  CHECK_FALSE(Unescape(R"(\x4)", "-K").ok());
  CHECK_FALSE(Unescape(R"(\xZZ)", "-K").ok());
  CHECK_FALSE(Unescape("\\", "-K").ok());
}

TEST_CASE("FormatError renders each kind of status for people", "[cli][args]") {
  CHECK(FormatError(Status::Ok()) == "OK");
  CHECK(FormatError(UsageError("bad thing")) == "bad thing");
  const std::string e = FormatError(Status::FromErrno(ENOENT, "open /x"));
  CHECK(e.find("open /x: ") == 0);
  CHECK(e.find("No such file") != std::string::npos);
}

TEST_CASE("tables align columns and drop trailing blanks", "[cli][output]") {
  Table t({"NAME", "N", "NOTE"}, {Align::kLeft, Align::kRight});
  t.AddRow({"orders", "3", ""});
  t.AddRow({"a", "120", "x"});
  t.AddRow({"short"});
  std::ostringstream os;
  t.Print(os);
  CHECK(os.str() ==
        "NAME      N  NOTE\n"
        "orders    3\n"
        "a       120  x\n"
        "short\n");
}

TEST_CASE("value formatting", "[cli][output]") {
  CHECK(FormatTimestampMs(0) == "1970-01-01T00:00:00.000Z");
  CHECK(FormatTimestampMs(1700000000123) == "2023-11-14T22:13:20.123Z");
  CHECK(FormatTimestampMs(-1) == "-");
  CHECK(FormatBytes(512) == "512 B");
  CHECK(FormatBytes(1536) == "1.5 KiB");
  CHECK(FormatBytes(64ull << 20) == "64.0 MiB");
  CHECK(Printable(std::nullopt) == "(null)");
  CHECK(Printable(std::string_view("a\\b\n\x01\xff", 6)) == "a\\\\b\\n\\x01\\xff");
  CHECK(Printable("abcdef", 3) == "abc...(6 bytes)");
  CHECK(SanitizeUtf8("h\xc3\xa9llo") == "h\xc3\xa9llo");
  CHECK(SanitizeUtf8("a\xff"
                     "b") ==
        "a\xef\xbf\xbd"
        "b");
  CHECK(SanitizeUtf8("\xc0\x80") == "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong
  CHECK(SanitizeUtf8("\xed\xa0\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  CHECK(SanitizeUtf8("\xe2\x82") == "\xef\xbf\xbd\xef\xbf\xbd");                  // truncated
  CHECK(SanitizeUtf8("\xf0\x9f\x98\x80") == "\xf0\x9f\x98\x80");
}

TEST_CASE("ISO 8601 dates and times for --to-datetime", "[cli][args]") {
  auto ms = [](std::string_view t) {
    auto r = ParseDateTimeMs(t, "--to-datetime");
    INFO(t << ": " << FormatError(r.status()));
    REQUIRE(r.ok());
    return *r;
  };
  CHECK(ms("1970-01-01") == 0);
  CHECK(ms("2023-11-14T22:13:20.123Z") == 1700000000123);
  CHECK(ms("2023-11-14T22:13:20.123") == 1700000000123);  // no zone: UTC
  CHECK(ms("2023-11-14 22:13:20.1234567Z") == 1700000000123);
  CHECK(ms("2023-11-14T22:13:20Z") == 1700000000000);
  CHECK(ms("2023-11-14T22:13Z") == 1700000000000 - 20000);
  CHECK(ms("2023-11-15T00:13:20+02:00") == 1700000000000);
  CHECK(ms("2023-11-15T00:13:20+0200") == 1700000000000);
  CHECK(ms("2023-11-14T20:13:20-02") == 1700000000000);
  CHECK(ms("2024-02-29") == ms("2024-03-01") - 86400000);  // leap day
  // Every rejection is a usage error that names the option and shows the form.
  for (const char* bad : {"", "yesterday", "2023-13-01", "2023-02-29", "2023-11-14T25:00", "2023-11-14T10",
                          "2023-11-14T10:00:00.", "2023-11-14T10:00:00+5", "2023-11-14T10:00:00 UTC",
                          "1969-12-31", "1700000000000"}) {
    auto r = ParseDateTimeMs(bad, "--to-datetime");
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().is(CliErrc::kUsage));
    CHECK(FormatError(r.status()).find("--to-datetime: '" + std::string(bad) + "'") == 0);
    CHECK(FormatError(r.status()).find("YYYY-MM-DD") != std::string::npos);
  }
}

}  // namespace
}  // namespace rdmq::cli
