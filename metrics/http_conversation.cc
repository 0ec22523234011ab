#include <boost/beast/http.hpp>

#include "rdmq/metrics/http.h"

namespace rdmq::metrics {
namespace {

namespace http = boost::beast::http;

HttpResponse Plain(unsigned status, std::string body) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(body)};
}

}  // namespace

std::string SerializeResponse(const HttpResponse& r, bool head, bool keep_alive) {
  const auto reason = http::obsolete_reason(static_cast<http::status>(r.status));
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + std::string(reason.data(), reason.size()) +
                    "\r\nContent-Type: " + r.content_type +
                    "\r\nContent-Length: " + std::to_string(r.body.size()) +
                    (keep_alive ? "\r\nConnection: keep-alive\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
  if (!head) out += r.body;
  return out;
}

HttpConversation::Step HttpConversation::Feed(std::string_view in) {
  Step step;
  if (in.empty()) return step;
  http::request_parser<http::empty_body> parser;
  parser.header_limit(kMaxHttpHeaderBytes);
  parser.body_limit(0);
  boost::beast::error_code ec;
  const size_t used = parser.put(boost::asio::buffer(in.data(), in.size()), ec);
  if (ec == http::error::need_more) {
    if (in.size() <= kMaxHttpHeaderBytes) return step;  // wait for the rest of the header
    ec = http::error::header_limit;
  }
  if (!ec && !parser.is_done()) {
    // The header is complete and announces a body (empty_body refuses to read one).
    ec = http::error::unexpected_body;
  }
  auto refuse = [&](unsigned status, std::string why) {
    step.consumed = in.size();
    step.output = SerializeResponse(Plain(status, std::move(why) + "\n"), false, false);
    step.close = true;
    return step;
  };
  if (ec == http::error::header_limit) return refuse(431, "request header larger than 8192 bytes");
  if (ec == http::error::unexpected_body || ec == http::error::body_limit) {
    return refuse(413, "requests carry no body here");
  }
  if (ec) return refuse(400, "malformed HTTP request: " + ec.message());
  const auto& req = parser.get();
  if (req.version() != 11 && req.version() != 10) return refuse(505, "HTTP/1.0 or HTTP/1.1 only");
  const http::verb method = req.method();
  if (method != http::verb::get && method != http::verb::head) {
    return refuse(405, "only GET and HEAD are served");
  }
  const std::string_view target(req.target().data(), req.target().size());
  if (target.empty() || target.front() != '/') return refuse(400, "the request target must be a path");
  HttpRequest r;
  r.method = method == http::verb::get ? "GET" : "HEAD";
  const size_t q = target.find('?');
  r.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) r.query = std::string(target.substr(q + 1));
  const bool keep_alive = req.keep_alive();
  const HttpResponse resp = handler_(r);
  step.consumed = used;
  step.output = SerializeResponse(resp, method == http::verb::head, keep_alive);
  step.close = !keep_alive;
  return step;
}

}  // namespace rdmq::metrics
