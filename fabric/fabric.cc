#include "rdmq/fabric/fabric.h"

#include "providers.h"

namespace rdmq::fabric {

std::string_view ProviderName(Provider p) noexcept {
  switch (p) {
    case Provider::kShm:
      return "shm";
    case Provider::kTcp:
      return "tcp";
    case Provider::kVerbs:
      return "verbs";
  }
  return "unknown";
}

Result<Provider> ParseProvider(std::string_view name) {
  if (name == "shm") return Provider::kShm;
  if (name == "tcp") return Provider::kTcp;
  if (name == "verbs") return Provider::kVerbs;
  return Status(Errc::kInvalidArgument,
                "unknown fabric provider '" + std::string(name) + "' (shm, tcp, verbs)");
}

std::string_view OpcodeName(Opcode op) noexcept {
  switch (op) {
    case Opcode::kWrite:
      return "WRITE";
    case Opcode::kWriteImm:
      return "WRITE_WITH_IMM";
    case Opcode::kRead:
      return "READ";
    case Opcode::kFetchAdd:
      return "FETCH_ADD";
    case Opcode::kCompareSwap:
      return "COMPARE_SWAP";
    case Opcode::kSend:
      return "SEND";
    case Opcode::kRecv:
      return "RECV";
  }
  return "UNKNOWN";
}

Result<std::unique_ptr<Fabric>> Fabric::Open(const FabricOptions& options) {
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
