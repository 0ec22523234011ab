// Writes tests/fuzz/seeds/kafka_request/: for every supported api, a request header and a small
// valid body at its lowest and highest supported versions. Run by hand from the repository root:
//   build/release/bin/kafka_fuzz_seed_gen tests/fuzz/seeds/kafka_request
#include <cstdio>
#include <fstream>
#include <string>

#include "rdmq/kafka/frame.h"
#include "tests/kafka/kafka_test_util.h"
#include "tests/kafka/samples.h"

namespace {

using namespace rdmq::kafka;

template <class Req>
bool Write(const std::string& dir, ApiKey key, int16_t version) {
  Writer w;
  RequestHeader h;
  h.api_key = static_cast<int16_t>(key);
  h.api_version = version;
  h.correlation_id = 1;
  h.client_id = "seed";
  EncodeRequestHeader(w, h);
  Encode(w, version, test::Sample<Req>());
  const auto bytes = w.Flatten();
  const std::string path = dir + "/" + std::string(ApiName(key)) + "-v" + std::to_string(version);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <seed directory>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;
#define RDMQ_KAFKA_SEED_(key, Req, Resp)                         \
  ok &= Write<Req>(dir, ApiKey::key, FindApi(ApiKey::key)->min); \
  ok &= Write<Req>(dir, ApiKey::key, FindApi(ApiKey::key)->max);
  RDMQ_KAFKA_TEST_APIS(RDMQ_KAFKA_SEED_)
#undef RDMQ_KAFKA_SEED_
  return ok ? 0 : 1;
}
