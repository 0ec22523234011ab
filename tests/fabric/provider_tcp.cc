// Selects the provider the conformance suite runs on in this binary.
#include "conformance.h"

namespace rdmq::fabric::test {
const Provider kProvider = Provider::kTcp;
FabricOptions SuiteOptions(bool) { return PlainOptions(); }
std::string PeerProvider() { return std::string(ProviderName(kProvider)); }
}  // namespace rdmq::fabric::test
