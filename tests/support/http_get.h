// A blocking HTTP/1.1 GET over a plain socket, for tests that scrape /metrics or probe
// /healthz: one request, `Connection: close`, the whole answer read until the server closes.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace rdmq::test {

struct HttpAnswer {
  int status = 0;    // 0: no connection or no status line
  std::string head;  // status line and headers
  std::string body;
};

// Sends `raw` to host:port (IPv4 literal) and reads until the server closes.
inline std::string HttpExchange(const std::string& address, const std::string& raw) {
  const size_t colon = address.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::atoi(address.c_str() + colon + 1)));
  if (inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr) != 1) return "";
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  std::string got;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
    for (size_t off = 0; off < raw.size();) {
      const ssize_t n = send(fd, raw.data() + off, raw.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    char buf[65536];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return got;
}

inline HttpAnswer HttpGet(const std::string& address, const std::string& path) {
  const std::string got =
      HttpExchange(address, "GET " + path + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
  HttpAnswer a;
  const size_t end = got.find("\r\n\r\n");
  if (got.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return a;
  a.status = std::atoi(got.c_str() + 9);
  a.head = got.substr(0, end);
  a.body = got.substr(end + 4);
  return a;
}

// The value of the Prometheus sample line in `text` that starts with `series`
// ("name{labels}"); -1 when absent.
inline double SampleValue(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + key.size()));
}

}  // namespace rdmq::test
