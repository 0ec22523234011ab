#include "rdmq/config/config_def.h"

#include <catch2/catch.hpp>

#include "rdmq/config/render.h"
#include "support/test_util.h"

namespace rdmq::config {
namespace {

enum class Mode : uint8_t { kA = 1, kB = 2 };

struct Inner {
  std::string name = "in";
  int32_t count = 3;
};

struct Outer {
  Inner inner;
  uint32_t size = 4096;
  bool on = true;
  Mode mode = Mode::kA;
  std::chrono::microseconds wait{1500};
  std::string fabric = "shm";
};

const ConfigDef<Inner>& InnerDef() {
  static const auto* def = [] {
    auto* d = new ConfigDef<Inner>("inner");
    d->Define({.name = "inner.name", .type = Type::kString, .doc = "A name.", .component = "inner"},
              Field(&Inner::name));
    d->Define({.name = "inner.count",
               .type = Type::kInt,
               .doc = "A count.",
               .component = "inner",
               .min = 0,
               .max = 9},
              Field(&Inner::count));
    return d;
  }();
  return *def;
}

const ConfigDef<Outer>& OuterDef() {
  static const auto* def = [] {
    auto* d = new ConfigDef<Outer>("outer");
    d->Define({.name = "size",
               .type = Type::kBytes,
               .doc = "Bytes | more.",
               .component = "outer",
               .min = 1,
               .max = 1 << 20},
              Field(&Outer::size));
    d->Define({.name = "on", .type = Type::kBool, .doc = "On.", .component = "outer"}, Field(&Outer::on));
    d->Define({.name = "mode",
               .type = Type::kEnum,
               .doc = "Mode.",
               .component = "outer",
               .choices = {{"a", 1}, {"b", 2}}},
              Field(&Outer::mode));
    d->Define({.name = "wait.ms",
               .type = Type::kDuration,
               .doc = "Wait.",
               .component = "outer",
               .min = 0,
               .max = 1000,
               .fractions = true},
              Field(&Outer::wait));
    d->Define({.name = "fabric",
               .type = Type::kEnum,
               .doc = "Fabric.",
               .component = "outer",
               .choices = {{"shm", 0}, {"tcp", 1}}},
              Field(&Outer::fabric));
    d->Include(InnerDef(), &Outer::inner);
    d->IncludeAs(InnerDef(), &Outer::inner, "default.count", "inner.count", "Default: ");
    return d;
  }();
  return *def;
}

TEST_CASE("a table sets each field from its key", "[config]") {
  Outer o;
  const auto& d = OuterDef();
  REQUIRE_OK(d.Set(&o, "size", "2KiB"));
  CHECK(o.size == 2048);
  REQUIRE_OK(d.Set(&o, "on=false"));
  CHECK(!o.on);
  REQUIRE_OK(d.Set(&o, "mode", "b"));
  CHECK(o.mode == Mode::kB);
  REQUIRE_OK(d.Set(&o, "wait.ms", "0.25"));
  CHECK(o.wait == std::chrono::microseconds(250));
  REQUIRE_OK(d.Set(&o, "fabric", "tcp"));
  CHECK(o.fabric == "tcp");
  REQUIRE_OK(d.Set(&o, "inner.name", "x"));
  CHECK(o.inner.name == "x");
  REQUIRE_OK(d.Set(&o, "default.count", "7"));
  CHECK(o.inner.count == 7);

  const auto entries = d.Entries(o);
  REQUIRE(entries.size() == 8);
  CHECK(entries[0] == std::make_pair(std::string("size"), std::string("2048")));
  CHECK(entries[3] == std::make_pair(std::string("wait.ms"), std::string("0.25")));
  CHECK(entries[4] == std::make_pair(std::string("fabric"), std::string("tcp")));
  // Every entry reads back to the same value.
  Outer back;
  for (const auto& [k, v] : entries) REQUIRE_OK(d.Set(&back, k, v));
  CHECK(d.Entries(back) == entries);
}

TEST_CASE("errors name the key, the value and what is accepted, failed sets change nothing", "[config]") {
  Outer o;
  const auto& d = OuterDef();
  Status s = d.Set(&o, "size", "0");
  CHECK(s.is(ConfigErrc::kBadValue));
  CHECK(s.context() == "size=0: must be a byte count in [1, 1 MiB] (suffixes KiB, MiB, GiB, TiB)");
  CHECK(o.size == 4096);
  s = d.Set(&o, "sise", "1");
  CHECK(s.is(ConfigErrc::kUnknownKey));
  CHECK(s.is(Errc::kInvalidArgument));
  CHECK(s.context() ==
        "unknown config key 'sise' for the outer (did you mean 'size'?); "
        "'rdmq config list outer' lists every key");
  CHECK(d.Set(&o, "compression.type", "zstd").context().find("did you mean") == std::string::npos);
  CHECK(d.Set(&o, "novalue").is(ConfigErrc::kBadValue));
  CHECK(d.Set(&o, "=1").is(ConfigErrc::kBadValue));
}

TEST_CASE("the closest key is suggested only when it is close", "[config]") {
  const std::vector<std::string_view> known = {"batch.size", "linger.ms", "acks"};
  CHECK(ClosestKey("batch.sise", known) == "batch.size");
  CHECK(ClosestKey("linger", known) == "linger.ms");
  CHECK(ClosestKey("ack", known) == "acks");
  CHECK(ClosestKey("retention.bytes", known).empty());
}

TEST_CASE("listings come from the table with defaults from a default object", "[config]") {
  const auto docs = OuterDef().Describe();
  REQUIRE(docs.size() == 8);
  CHECK(docs[0].default_value == "4096");
  CHECK(docs[0].default_human == "4 KiB");
  CHECK(docs[3].default_value == "1.5");
  CHECK(docs[7].spec.component == "outer");
  CHECK(docs[7].spec.doc == "Default: A count.");
  const std::vector<TableDoc> tables = {{"outer", "Outer settings.", docs}};
  const std::string text = RenderText(tables);
  CHECK(text.find("size  (bytes, default 4096 = 4 KiB, read by outer)") != std::string::npos);
  CHECK(text.find("Accepts a, b.") == std::string::npos);
  CHECK(text.find("Accepts a or b.") != std::string::npos);
  const std::string md = RenderMarkdown(tables, "# Title\n");
  CHECK(md.find("## outer") != std::string::npos);
  CHECK(md.find("Bytes \\| more.") != std::string::npos);
  const std::string json = RenderJson(tables);
  CHECK(json.find("\"choices\": [") != std::string::npos);
  CHECK(json.find("\"unit\": \"ms\"") != std::string::npos);
}

}  // namespace
}  // namespace rdmq::config
