#include "rdmq/fabric/fabric.h"

#include <array>

#include "providers.h"

namespace rdmq::fabric {

namespace {
// Names indexed by the enums' values (0: none).
constexpr std::array<std::string_view, 4> kProviderNames = {"", "shm", "tcp", "verbs"};
constexpr std::array<std::string_view, 8> kOpcodeNames = {
    "", "WRITE", "WRITE_WITH_IMM", "READ", "FETCH_ADD", "COMPARE_SWAP", "SEND", "RECV"};
static_assert(static_cast<size_t>(Provider::kVerbs) + 1 == kProviderNames.size());
static_assert(static_cast<size_t>(Opcode::kRecv) + 1 == kOpcodeNames.size());
}  // namespace

std::string_view ProviderName(Provider p) noexcept {
  const auto i = static_cast<size_t>(p);
  return i > 0 && i < kProviderNames.size() ? kProviderNames[i] : "unknown";
}

Result<Provider> ParseProvider(std::string_view name) {
  for (size_t i = 1; i < kProviderNames.size(); ++i) {
    if (name == kProviderNames[i]) return static_cast<Provider>(i);
  }
  return Status(Errc::kInvalidArgument,
                "unknown fabric provider '" + std::string(name) + "' (shm, tcp, verbs)");
}

std::string_view OpcodeName(Opcode op) noexcept {
  const auto i = static_cast<size_t>(op);
  return i > 0 && i < kOpcodeNames.size() ? kOpcodeNames[i] : "UNKNOWN";
}

Result<std::unique_ptr<Fabric>> Fabric::Open(const FabricOptions& options) {
  if (options.tls.enabled && options.provider != Provider::kTcp) {
    return Status(Errc::kUnsupported, "TLS is built for the tcp fabric only, not " +
                                          std::string(ProviderName(options.provider)) +
                                          " (shm stays on one host; verbs has no TLS yet)");
  }
  switch (options.provider) {
    case Provider::kShm:
      return internal::OpenShm(options);
    case Provider::kTcp:
      return internal::OpenTcp(options);
    case Provider::kVerbs:
      return internal::OpenVerbs(options);
  }
  return Status(Errc::kInvalidArgument,
                "unknown fabric provider " + std::to_string(static_cast<int>(options.provider)));
}

}  // namespace rdmq::fabric
