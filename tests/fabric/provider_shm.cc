// Selects the provider the conformance suite runs on in this binary.
#include "conformance.h"

namespace rdmq::fabric::test {
const Provider kProvider = Provider::kShm;
}  // namespace rdmq::fabric::test
