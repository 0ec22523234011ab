#include "rdmq/cli/records.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "support/test_util.h"

namespace rdmq::cli {
namespace {

RecordFields Sample() {
  RecordFields r;
  r.topic = "orders";
  r.partition = 2;
  r.offset = 41;
  r.timestamp_ms = 1700000000123;
  r.key = "k1";
  r.value = "hello";
  r.headers = {{"trace", "abc"}, {"flag", std::nullopt}};
  return r;
}

std::string Render(std::string_view format, const RecordFields& r) {
  auto f = RecordFormatter::Compile(format);
  REQUIRE_OK(f);
  std::string out;
  f->Append(r, &out);
  return out;
}

TEST_CASE("format strings render every directive", "[cli][records]") {
  const RecordFields r = Sample();
  CHECK(Render("%s\\n", r) == "hello\n");
  CHECK(Render("%v", r) == "hello");
  CHECK(Render("%t/%p@%o %T %k=%v (%K,%S) [%h] 100%%", r) ==
        "orders/2@41 1700000000123 k1=hello (2,5) [trace=abc,flag] 100%");
  CHECK(Render("\\t%k\\x3a%s", r) == "\tk1:hello");
  CHECK(Render("plain", r) == "plain");
  CHECK(Render("", r).empty());

  RecordFields n = Sample();
  n.key.reset();
  n.value.reset();
  n.headers.clear();
  CHECK(Render("[%k][%s][%K][%S][%h]", n) == "[][][-1][-1][]");
  n.value = "";
  CHECK(Render("[%s][%S]", n) == "[][0]");
}

TEST_CASE("bad format strings are usage errors naming the directive", "[cli][records]") {
  auto f = RecordFormatter::Compile("%k %q");
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().is(CliErrc::kUsage));
  CHECK(FormatError(f.status()).find("unknown directive '%q'") != std::string::npos);
  f = RecordFormatter::Compile("abc%");
  REQUIRE_FALSE(f.ok());
  CHECK(FormatError(f.status()).find("lone '%'") != std::string::npos);
  CHECK_FALSE(RecordFormatter::Compile("\\y").ok());
}

TEST_CASE("records as JSON have stable names and survive binary bytes", "[cli][records]") {
  RecordFields r = Sample();
  const std::string binary("v\xff\x00z", 4);
  r.value = binary;
  const auto j = nlohmann::json::parse(RecordToJson(r));
  CHECK(j["topic"] == "orders");
  CHECK(j["partition"] == 2);
  CHECK(j["offset"] == 41);
  CHECK(j["timestamp_ms"] == 1700000000123);
  CHECK(j["key"] == "k1");
  CHECK(j["value"] == std::string("v\xef\xbf\xbd\0z", 6));
  REQUIRE(j["headers"].size() == 2);
  CHECK(j["headers"][0]["key"] == "trace");
  CHECK(j["headers"][0]["value"] == "abc");
  CHECK(j["headers"][1]["value"].is_null());
  r.key.reset();
  CHECK(nlohmann::json::parse(RecordToJson(r))["key"].is_null());
  CHECK(RecordToJson(r).find('\n') == std::string::npos);
}

TEST_CASE("input lines split at the first key delimiter", "[cli][records]") {
  auto l = SplitLine("k:v:w", ":");
  REQUIRE_OK(l);
  CHECK(l->key == "k");
  CHECK(l->value == "v:w");
  l = SplitLine(":v", ":");
  REQUIRE_OK(l);
  CHECK(l->key == "");
  CHECK(l->value == "v");
  l = SplitLine("key::value", "::");
  REQUIRE_OK(l);
  CHECK(l->key == "key");
  CHECK(l->value == "value");
  l = SplitLine("no delimiter here", "");
  REQUIRE_OK(l);
  CHECK_FALSE(l->key.has_value());
  CHECK(l->value == "no delimiter here");
  auto bad = SplitLine("novalue", "\t");
  REQUIRE_FALSE(bad.ok());
  CHECK(FormatError(bad.status()) == "no key delimiter '\\t' in the line");
}

TEST_CASE("offset specs", "[cli][records]") {
  using K = OffsetSpec::Kind;
  struct Case {
    std::string text;
    K kind;
    int64_t value;
  };
  for (const Case& c : std::vector<Case>{{"beginning", K::kBeginning, 0},
                                         {"earliest", K::kBeginning, 0},
                                         {"end", K::kEnd, 0},
                                         {"latest", K::kEnd, 0},
                                         {"0", K::kAbsolute, 0},
                                         {"1234", K::kAbsolute, 1234},
                                         {"-10", K::kFromEnd, 10},
                                         {"@1700000000000", K::kTimestamp, 1700000000000},
                                         {"s@5", K::kTimestamp, 5}}) {
    INFO(c.text);
    auto s = ParseOffsetSpec(c.text);
    REQUIRE_OK(s);
    CHECK(s->kind == c.kind);
    CHECK(s->value == c.value);
  }
  for (const char* bad : {"", "begin", "-0", "--1", "1.5", "@", "@x", "x@5", "-"}) {
    INFO(bad);
    auto s = ParseOffsetSpec(bad);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().is(CliErrc::kUsage));
  }
  // Resolution against a partition holding [100, 250).
  auto at = [](std::string_view t) { return ResolveStartOffset(*ParseOffsetSpec(t), 100, 250); };
  CHECK(at("beginning") == 100);
  CHECK(at("end") == 250);
  CHECK(at("120") == 120);
  CHECK(at("5") == 100);    // below the log start: the log start
  CHECK(at("999") == 250);  // past the end: the end
  CHECK(at("-10") == 240);
  CHECK(at("-1000") == 100);
  CHECK(ResolveStartOffset(*ParseOffsetSpec("-3"), 0, 0) == 0);
}

}  // namespace
}  // namespace rdmq::cli

namespace rdmq::cli {
namespace {

// Feeds `input` through a temporary file and collects what the reader splits it into.
std::vector<std::string> Split(const std::string& input, const std::string& delim, size_t max = 64u << 20) {
  test::TempDir tmp;
  const std::string path = (tmp / "in").string();
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(std::fwrite(input.data(), 1, input.size(), f) == input.size());
    std::fclose(f);
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  DelimitedReader r(fd, delim, max);
  std::vector<std::string> out;
  std::string_view rec;
  while (true) {
    auto more = r.Next(&rec);
    REQUIRE_OK(more);
    if (!*more) break;
    out.emplace_back(rec);
    CHECK(r.record_number() == out.size());
  }
  ::close(fd);
  return out;
}

TEST_CASE("input splits into records at the delimiter", "[cli][records]") {
  using V = std::vector<std::string>;
  CHECK(Split("a\nb\nc\n", "\n") == V{"a", "b", "c"});
  CHECK(Split("a\nb\nc", "\n") == V{"a", "b", "c"});  // last line without newline
  CHECK(Split("a\n\nb\n", "\n") == V{"a", "", "b"});  // empty lines are records
  CHECK(Split("", "\n").empty());
  CHECK(Split("\n", "\n") == V{""});
  CHECK(Split("x||y||", "||") == V{"x", "y"});
  CHECK(Split(std::string("k\0v\0", 4), std::string(1, '\0')) == V{"k", "v"});
  CHECK(Split("a\r\nb", "\n") == V{"a\r", "b"});  // bytes are kept exactly
}

TEST_CASE("records and delimiters straddling read chunks", "[cli][records]") {
  const uint64_t seed = test::TestSeed();
  std::mt19937_64 rng(seed);
  for (const std::string delim : {"\n", "<END>"}) {
    std::vector<std::string> want;
    std::string input;
    while (input.size() < (3u << 20)) {  // several 1 MiB chunks
      std::string rec(rng() % 5000, 'x');
      for (auto& c : rec) c = static_cast<char>('a' + rng() % 26);
      if (rng() % 50 == 0) rec.assign(300000, 'L');  // some long ones
      input += rec + delim;
      want.push_back(std::move(rec));
    }
    CHECK(Split(input, delim) == want);
  }
}

TEST_CASE("a record over the size limit is an error naming it", "[cli][records]") {
  test::TempDir tmp;
  const std::string path = (tmp / "in").string();
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    const std::string data = "ok\n" + std::string(5000, 'z') + "\n";
    std::fwrite(data.data(), 1, data.size(), f);
    std::fclose(f);
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  DelimitedReader r(fd, "\n", 1000);
  std::string_view rec;
  auto first = r.Next(&rec);
  REQUIRE_OK(first);
  CHECK(rec == "ok");
  auto second = r.Next(&rec);
  REQUIRE_FALSE(second.ok());
  CHECK(FormatError(second.status()) ==
        "record 2 is longer than 1000 bytes (no delimiter within that length)");
  ::close(fd);
}

}  // namespace
}  // namespace rdmq::cli
