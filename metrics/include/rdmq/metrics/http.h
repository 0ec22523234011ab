// A small HTTP/1.1 server for operators' endpoints (/metrics, /healthz, /readyz), on Boost.Beast's
// parser and Boost.Asio. Requests are GET or HEAD without a body; anything else is answered with
// the right 4xx status and the connection closes.
//
// The protocol work is sans-I/O (HttpConversation: bytes in, response bytes out), so it is unit
// tested and fuzzed without sockets; HttpServer only moves bytes.
//
//   auto s = HttpServer::Start("127.0.0.1:9194", [](const HttpRequest& r) {
//     if (r.path == "/healthz") return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"};
//     return HttpResponse{404, "text/plain; charset=utf-8", "not found\n"};
//   });
//
// Threading: the handler runs on the server's one thread, one request at a time; it must not
// block for long (a scrape builds its text and returns). Stop (or the destructor) closes every
// connection and joins the thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "rdmq/common/status.h"

namespace rdmq::metrics {

struct HttpRequest {
  std::string method;  // "GET" or "HEAD" (others never reach the handler)
  std::string path;    // the target up to '?'
  std::string query;   // after '?', undecoded
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// Limits on what a client may send.
inline constexpr size_t kMaxHttpHeaderBytes = 8192;

// One connection's protocol state: feed it the bytes read; it answers complete requests.
class HttpConversation {
 public:
  explicit HttpConversation(HttpHandler handler) : handler_(std::move(handler)) {}

  struct Step {
    size_t consumed = 0;  // bytes of the input used (the rest waits for the next call)
    std::string output;   // response bytes to write (empty: need more input)
    bool close = false;   // close once `output` is written
  };
  // Parses at most one request from `in`. A request that is complete gets its response; a
  // malformed one 400, a body 413, an unknown method 405, oversized headers 431, each with
  // close. An incomplete one consumes nothing and asks for more.
  Step Feed(std::string_view in);

 private:
  HttpHandler handler_;
};

// The response bytes for `r` (HTTP/1.1, Content-Length, the body left out for HEAD).
std::string SerializeResponse(const HttpResponse& r, bool head, bool keep_alive);

class HttpServer {
 public:
  // Binds `listen` (host:port; port 0: any free port) and serves on a thread of its own.
  // kInvalidArgument for an address that does not parse, kAlreadyExists when it is taken.
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& listen, HttpHandler handler);
  virtual ~HttpServer() = default;
  // host:port with the real port.
  virtual const std::string& address() const = 0;
  virtual void Stop() = 0;
};

}  // namespace rdmq::metrics
