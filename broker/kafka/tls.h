// The Kafka listener's TLS context (kafka.security.protocol=SSL): the broker's certificate chain
// and key, TLS 1.2 or later, and client certificates checked against ssl.ca.location as
// ssl.client.auth says (none, requested, required). The broker also builds it (and drops it) to
// check the same files for the tcp fabric's TLS (rpc.security.protocol=SSL) at start.
#pragma once

#include <memory>

#include "broker/kafka/stream.h"
#include "rdmq/broker/config.h"
#include "rdmq/common/status.h"

namespace rdmq::broker::internal {

// kInvalidArgument naming the key and the file when a file cannot be read or the key does not
// match the certificate.
Result<std::unique_ptr<boost::asio::ssl::context>> MakeKafkaTls(const BrokerConfig& cfg);

}  // namespace rdmq::broker::internal
