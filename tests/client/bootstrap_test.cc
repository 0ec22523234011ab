// bootstrap.servers: a comma-separated list, tried in order.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "rdmq/client/connection.h"
#include "rdmq/client/options.h"
#include "support/test_util.h"

namespace rdmq::client {
namespace {

using Servers = std::vector<std::string>;

TEST_CASE("bootstrap.servers: one address or a comma-separated list", "[client][bootstrap]") {
  auto one = ParseBootstrapServers("tcp:10.0.0.1:9092");
  REQUIRE_OK(one);
  CHECK(*one == Servers{"tcp:10.0.0.1:9092"});
  auto list = ParseBootstrapServers(" tcp:a:1 ,tcp:b:2,, tcp:c:3 ");
  REQUIRE_OK(list);
  CHECK(*list == Servers{"tcp:a:1", "tcp:b:2", "tcp:c:3"});
  // Bare paths are shm addresses.
  auto shm = ParseBootstrapServers("/run/a.sock,unix:/run/b.sock");
  REQUIRE_OK(shm);
  CHECK(*shm == Servers{"unix:/run/a.sock", "unix:/run/b.sock"});
}

TEST_CASE("bootstrap.servers: bad lists are refused, naming the entry", "[client][bootstrap]") {
  CHECK(ParseBootstrapServers("").status().is(Errc::kInvalidArgument));
  CHECK(ParseBootstrapServers(" , ").status().is(Errc::kInvalidArgument));
  const Status bad = ParseBootstrapServers("tcp:a:1,ftp:nowhere").status();
  CHECK(bad.is(Errc::kInvalidArgument));
  CHECK(bad.ToString().find("ftp:nowhere") != std::string::npos);
  const Status mixed = ParseBootstrapServers("tcp:a:1,unix:/x.sock").status();
  CHECK(mixed.is(Errc::kInvalidArgument));
  CHECK(mixed.ToString().find("same fabric") != std::string::npos);
}

TEST_CASE("bootstrap.servers: the key keeps the whole list, the default applies", "[client][bootstrap]") {
  ClientOptions o;
  REQUIRE_OK(o.Set("bootstrap.servers", "tcp:a:1,tcp:b:2"));
  CHECK(o.bootstrap == "tcp:a:1,tcp:b:2");
  auto s = o.BootstrapServers();
  REQUIRE_OK(s);
  CHECK(*s == Servers{"tcp:a:1", "tcp:b:2"});
  ClientOptions d;
  ::unsetenv("RDMQ_BROKER");
  auto def = d.BootstrapServers();
  REQUIRE_OK(def);
  CHECK(*def == Servers{"unix:./rdmq-data/rdmq.sock"});
}

TEST_CASE("connecting tries every bootstrap server and names each that failed", "[client][bootstrap]") {
  test::TempDir dir;
  ClientOptions o;
  o.bootstrap = "unix:" + (dir.path() / "a.sock").string() + ",unix:" + (dir.path() / "b.sock").string();
  auto c = Connection::Open(o);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().is(Errc::kUnavailable));
  CHECK(c.status().ToString().find("a.sock") != std::string::npos);
  CHECK(c.status().ToString().find("b.sock") != std::string::npos);
}

}  // namespace
}  // namespace rdmq::client
