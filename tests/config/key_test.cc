#include "rdmq/config/key.h"

#include <catch2/catch.hpp>
#include <limits>

#include "support/test_util.h"

namespace rdmq::config {
namespace {

std::string Error(const KeySpec& spec, std::string_view text) {
  auto v = ParseValue(spec, text);
  if (v.ok()) return "(accepted)";
  CHECK(v.status().is(ConfigErrc::kBadValue));
  CHECK(v.status().is(Errc::kInvalidArgument));
  return std::string(v.status().context());
}

TEST_CASE("bool keys take true or false", "[config]") {
  const KeySpec s{.name = "check.crcs", .type = Type::kBool};
  CHECK(ParseValue(s, "true")->number == 1);
  CHECK(ParseValue(s, "false")->number == 0);
  CHECK(Error(s, "yes") == "check.crcs=yes: must be true or false");
  CHECK(FormatValue(s, Value{.number = 1}) == "true");
}

TEST_CASE("int keys are strict decimals in range, with special values", "[config]") {
  const KeySpec s{.name = "partitions", .type = Type::kInt, .min = 1, .max = 4096};
  CHECK(ParseValue(s, "12")->number == 12);
  CHECK(Error(s, "0") == "partitions=0: must be an integer in [1, 4096]");
  for (const char* bad : {"", "12x", " 3", "+3", "1.5", "99999999999999999999"}) {
    INFO(bad);
    CHECK(!ParseValue(s, bad).ok());
  }
  const KeySpec r{.name = "retention.bytes",
                  .type = Type::kInt,
                  .min = 1,
                  .max = std::numeric_limits<int64_t>::max(),
                  .specials = {{-1, "no limit"}}};
  CHECK(ParseValue(r, "-1")->number == -1);
  CHECK(ParseValue(r, "9223372036854775807")->number == std::numeric_limits<int64_t>::max());
  CHECK(Error(r, "0") == "retention.bytes=0: must be an integer >= 1 or -1 (no limit)");
  CHECK(Error(r, "-2").find("or -1 (no limit)") != std::string::npos);
}

TEST_CASE("byte keys take binary suffixes", "[config]") {
  const KeySpec s{.name = "segment.bytes", .type = Type::kBytes, .min = 64 << 10, .max = 64LL << 30};
  CHECK(ParseValue(s, "65536")->number == 65536);
  CHECK(ParseValue(s, "64KiB")->number == 65536);
  CHECK(ParseValue(s, "1MiB")->number == 1 << 20);
  CHECK(ParseValue(s, "2g")->number == 2LL << 30);
  CHECK(ParseValue(s, "64GiB")->number == 64LL << 30);
  CHECK(Error(s, "100") ==
        "segment.bytes=100: must be a byte count in [64 KiB, 64 GiB] (suffixes KiB, MiB, GiB, TiB)");
  CHECK(!ParseValue(s, "65GiB").ok());
  CHECK(!ParseValue(s, "1.5MiB").ok());
  CHECK(!ParseValue(s, "1XiB").ok());
  CHECK(!ParseValue(s, "9999999999999TiB").ok());  // overflows
  CHECK(FormatValue(s, Value{.number = 64 << 20}) == "67108864");
  CHECK(HumanValue(s, Value{.number = 64 << 20}) == "64 MiB");
  CHECK(HumanValue(s, Value{.number = 1000}) == "");
}

TEST_CASE("duration keys read their own unit, other units and (where allowed) fractions", "[config]") {
  const KeySpec ms{.name = "lease.ms", .type = Type::kDuration, .min = 100, .max = 3'600'000};
  CHECK(ParseValue(ms, "2000")->number == 2000);
  CHECK(ParseValue(ms, "2s")->number == 2000);
  CHECK(ParseValue(ms, "1.5s")->number == 1500);
  CHECK(ParseValue(ms, "1h")->number == 3'600'000);
  CHECK(ParseValue(ms, "250000us")->number == 250);
  CHECK(!ParseValue(ms, "1500us").ok());  // not a whole number of ms
  CHECK(!ParseValue(ms, "2h").ok());
  CHECK(!ParseValue(ms, "0.5").ok());  // no fractions for this key
  CHECK(!ParseValue(ms, "5 s").ok());
  CHECK(!ParseValue(ms, "s").ok());
  CHECK(!ParseValue(ms, ".5s").ok());
  CHECK(Error(ms, "5").find("lease.ms=5: must be a number of ms in [100, 3600000]") == 0);
  CHECK(HumanValue(ms, Value{.number = 3'600'000}) == "1 h");
  CHECK(HumanValue(ms, Value{.number = 1500}) == "");

  const KeySpec linger{
      .name = "linger.ms", .type = Type::kDuration, .min = 0, .max = 3'600'000, .fractions = true};
  CHECK(Resolution(linger) == Unit::kMicros);
  CHECK(ParseValue(linger, "0.05")->number == 50);
  CHECK(ParseValue(linger, "5")->number == 5000);
  CHECK(ParseValue(linger, "0.0005")->number == 0);  // truncated to the resolution
  CHECK(ParseValue(linger, "100us")->number == 100);
  CHECK(!ParseValue(linger, "-0.5").ok());
  CHECK(FormatValue(linger, Value{.number = 50}) == "0.05");
  CHECK(FormatValue(linger, Value{.number = 5000}) == "5");
  CHECK(FormatValue(linger, Value{.number = 1250}) == "1.25");

  const KeySpec ret{.name = "retention.ms",
                    .type = Type::kDuration,
                    .min = 1,
                    .max = std::numeric_limits<int64_t>::max(),
                    .specials = {{-1, "no limit"}}};
  CHECK(ParseValue(ret, "-1")->number == -1);
  CHECK(ParseValue(ret, "7d")->number == 7LL * 24 * 3600 * 1000);
  CHECK(ParseValue(ret, "9223372036854775807")->number == std::numeric_limits<int64_t>::max());
  CHECK(!ParseValue(ret, "0").ok());
  CHECK(HumanValue(ret, Value{.number = 7LL * 24 * 3600 * 1000}) == "7 d");
  CHECK(HumanValue(ret, Value{.number = -1}) == "");
}

TEST_CASE("enum keys take their spellings, several may share a value", "[config]") {
  const KeySpec s{
      .name = "acks", .type = Type::kEnum, .choices = {{"0", 0}, {"1", 1}, {"all", -1}, {"-1", -1}}};
  CHECK(ParseValue(s, "all")->number == -1);
  CHECK(ParseValue(s, "-1")->text == "all");
  CHECK(Error(s, "2") == "acks=2: must be 0, 1, all or -1");
  CHECK(FormatValue(s, Value{.number = -1}) == "all");
}

TEST_CASE("string keys may refuse the empty string", "[config]") {
  const KeySpec s{.name = "data.dir", .type = Type::kString, .non_empty = true};
  CHECK(ParseValue(s, "/d")->text == "/d");
  CHECK(Error(s, "") == "data.dir=: must be a non-empty string");
  const KeySpec any{.name = "device", .type = Type::kString};
  CHECK(ParseValue(any, "")->text.empty());
}

}  // namespace
}  // namespace rdmq::config
