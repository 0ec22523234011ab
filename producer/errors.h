// How the producer classifies errors: which ones a new lease (and a resend) may cure.
//
// Threading: pure functions.
#pragma once

#include "rdmq/common/status.h"

namespace rdmq::producer {

// True for errors after which the partition's lease is simply opened again and the batches not
// acknowledged are resent: a lost, expired or busy lease, a stale segment, a sequence the broker
// saw out of order, the broker or its storage briefly unavailable, a broker that no longer leads
// the partition (the cluster producer moves the batches to the new leader, cluster_producer.h).
bool Retriable(const Status& s);

}  // namespace rdmq::producer
