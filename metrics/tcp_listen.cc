#include "rdmq/metrics/tcp_listen.h"

#include <boost/asio.hpp>

namespace rdmq::metrics {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

Result<std::string> ListenTcp(tcp::acceptor& acceptor, const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return Status(Errc::kInvalidArgument, "'" + listen + "' is not host:port");
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  boost::system::error_code ec;
  tcp::resolver resolver(acceptor.get_executor());
  auto found = resolver.resolve(host, listen.substr(colon + 1),
                                tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || found.empty()) {
    return Status(Errc::kInvalidArgument, listen + ": cannot resolve '" + host + "': " + ec.message());
  }
  const tcp::endpoint ep = found.begin()->endpoint();
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(ec == asio::error::address_in_use ? Errc::kAlreadyExists : Errc::kUnavailable,
                  listen + ": " + ec.message());
  }
  const tcp::endpoint bound = acceptor.local_endpoint(ec);
  const std::string h = bound.address().to_string();
  return (bound.address().is_v6() ? "[" + h + "]" : h) + ":" + std::to_string(bound.port());
}

}  // namespace rdmq::metrics
