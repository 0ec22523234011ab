#include "rdmq/common/log.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rdmq::log {
namespace {

struct Capture {
  std::vector<std::string> lines;
  Capture() {
    SetSink([this](std::string_view l) { lines.emplace_back(l); });
  }
  ~Capture() {
    SetSink(nullptr);
    SetFormat(Format::kText);
    SetLevel(Level::kInfo);
  }
};

TEST_CASE("text lines carry level, module, message and fields", "[log]") {
  Capture cap;
  SetFormat(Format::kText);
  SetLevel(Level::kInfo);
  RDMQ_LOG(kInfo, "storage", "segment rolled").kv("topic", "orders").kv("base", Offset(100)).kv("ok", true);
  RDMQ_LOG(kDebug, "storage", "not shown");
  REQUIRE(cap.lines.size() == 1);
  const std::string& l = cap.lines[0];
  CHECK(l.find(" INFO storage: segment rolled topic=orders base=100 ok=true\n") != std::string::npos);
}

TEST_CASE("json lines parse and escape values", "[log]") {
  Capture cap;
  SetFormat(Format::kJson);
  RDMQ_LOG(kWarn, "fabric", "peer \"gone\"").kv("why", "line\nbreak").kv("n", -3);
  REQUIRE(cap.lines.size() == 1);
  auto j = nlohmann::json::parse(cap.lines[0]);
  CHECK(j["level"] == "warn");
  CHECK(j["module"] == "fabric");
  CHECK(j["msg"] == "peer \"gone\"");
  CHECK(j["why"] == "line\nbreak");
  CHECK(j["n"] == -3);
}

TEST_CASE("disabled levels do not evaluate their arguments", "[log]") {
  Capture cap;
  SetLevel(Level::kError);
  int evaluated = 0;
  RDMQ_LOG(kInfo, "x", "y").kv("n", ++evaluated);
  CHECK(evaluated == 0);
  CHECK(cap.lines.empty());
  Level l;
  CHECK(ParseLevel("debug", &l));
  CHECK(l == Level::kDebug);
  CHECK_FALSE(ParseLevel("loud", &l));
}

}  // namespace
}  // namespace rdmq::log
