// GroupConsumer: the Consumer an application gets when `group.id` is set. It wraps the one-sided
// reader (consumer.cc, which knows nothing of groups) and adds what docs/groups.md asks of a
// member: Subscribe through Membership's heartbeats, applying assignment changes inside Poll
// (listener callbacks, committed offsets as starting positions), commits, pause/resume, and a
// Close that commits and leaves the group.
//
// Threading: as Consumer (one application thread at a time); Membership has its own thread.
#pragma once

#include <memory>

#include "rdmq/client/connection.h"
#include "rdmq/consumer/consumer.h"

namespace rdmq::consumer::internal {

// `reader` is the plain consumer; the result owns it and a control connection of its own.
Result<std::unique_ptr<Consumer>> MakeGroupConsumer(const ConsumerConfig& cfg,
                                                    std::unique_ptr<Consumer> reader);

}  // namespace rdmq::consumer::internal
