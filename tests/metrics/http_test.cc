// The HTTP endpoint: the conversation (sans-I/O) on good, pipelined, partial and bad requests,
// and the server over a real loopback socket.
#include "rdmq/metrics/http.h"

#include <catch2/catch.hpp>
#include <string>

#include "support/http_get.h"
#include "support/test_util.h"

using namespace rdmq;
using namespace rdmq::metrics;

namespace {

HttpResponse Route(const HttpRequest& r) {
  if (r.path == "/healthz") return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"};
  if (r.path == "/echo") return HttpResponse{200, "text/plain; charset=utf-8", r.method + " " + r.query};
  return HttpResponse{404, "text/plain; charset=utf-8", "no such endpoint\n"};
}

std::string StatusLine(const std::string& out) { return out.substr(0, out.find("\r\n")); }

}  // namespace

TEST_CASE("a GET is answered with status, length and body", "[metrics][http]") {
  HttpConversation c(Route);
  const std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  auto s = c.Feed(req);
  CHECK(s.consumed == req.size());
  CHECK_FALSE(s.close);
  CHECK(s.output ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n"
        "Connection: keep-alive\r\n\r\nok\n");
}

TEST_CASE("HEAD leaves the body out but keeps its length, and the query reaches the handler",
          "[metrics][http]") {
  HttpConversation c(Route);
  auto s = c.Feed("HEAD /echo?a=1 HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(StatusLine(s.output) == "HTTP/1.1 200 OK");
  CHECK(s.output.ends_with("Content-Length: 8\r\nConnection: keep-alive\r\n\r\n"));
  s = c.Feed("GET /echo?a=1 HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(s.output.ends_with("\r\n\r\nGET a=1"));
}

TEST_CASE("a partial request waits, pipelined requests are answered one per call", "[metrics][http]") {
  HttpConversation c(Route);
  const std::string one = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  for (size_t cut = 0; cut < one.size(); ++cut) {
    auto s = c.Feed(one.substr(0, cut));
    CHECK(s.consumed == 0);
    CHECK(s.output.empty());
  }
  const std::string two = one + "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  auto s = c.Feed(two);
  CHECK(s.consumed == one.size());
  CHECK(StatusLine(s.output) == "HTTP/1.1 200 OK");
  s = c.Feed(std::string_view(two).substr(s.consumed));
  CHECK(StatusLine(s.output) == "HTTP/1.1 404 Not Found");
  CHECK(s.close);
  CHECK(s.output.find("Connection: close") != std::string::npos);
}

TEST_CASE("bad requests get a 4xx and close, and the handler never sees them", "[metrics][http]") {
  int calls = 0;
  HttpConversation c([&](const HttpRequest& r) {
    ++calls;
    return Route(r);
  });
  struct Case {
    std::string in;
    std::string status;
  };
  const Case cases[] = {
      {"garbage\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"GET /x HTTP/1.1\r\nHost x\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 405 Method Not Allowed"},
      {"DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 405 Method Not Allowed"},
      {"GET /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", "HTTP/1.1 413 Payload Too Large"},
      {"GET /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
       "HTTP/1.1 413 Payload Too Large"},
      {"GET x HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"GET /x HTTP/1.1\r\nHost: x\r\nX: " + std::string(9000, 'a') + "\r\n\r\n",
       "HTTP/1.1 431 Request Header Fields Too Large"},
      {"GET /x HTTP/1.1\r\nX: " + std::string(9000, 'a'), "HTTP/1.1 431 Request Header Fields Too Large"},
  };
  for (const auto& k : cases) {
    INFO(k.in.substr(0, 60));
    auto s = c.Feed(k.in);
    CHECK(StatusLine(s.output) == k.status);
    CHECK(s.close);
    CHECK(s.consumed == k.in.size());
  }
  CHECK(calls == 0);
}

TEST_CASE("the server answers over loopback and refuses a second bind of its port", "[metrics][http]") {
  auto s = HttpServer::Start("127.0.0.1:0", Route);
  REQUIRE_OK(s);
  const std::string addr = (*s)->address();
  REQUIRE(addr.rfind("127.0.0.1:", 0) == 0);
  auto a = test::HttpGet(addr, "/healthz");
  CHECK(a.status == 200);
  CHECK(a.body == "ok\n");
  CHECK(test::HttpGet(addr, "/nope").status == 404);
  // Two pipelined requests on one connection, then close.
  const std::string both = test::HttpExchange(
      addr,
      "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /echo?q HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(both.find("ok\n") != std::string::npos);
  CHECK(both.ends_with("GET q"));
  // Bad input closes that connection only.
  CHECK(test::HttpExchange(addr, "BREW /pot HTCPCP/1.0\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);
  CHECK(test::HttpGet(addr, "/healthz").status == 200);
  auto again = HttpServer::Start(addr, Route);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().is(Errc::kAlreadyExists));
  CHECK_FALSE(HttpServer::Start("no-colon", Route).ok());
  (*s)->Stop();
  CHECK(test::HttpGet(addr, "/healthz").status == 0);
}
