// What the rdmq tools (`rdmq`, `rdmq-produce`, `rdmq-consume`, `rdmq-demo`) share on top of the
// command-line parser of config/args.h (CommandSpec, ParsedArgs, ParseInt, ParseKeyValue, which
// this header brings into rdmq::cli): exit codes, the tools' error category, escapes, error
// formatting, and -X KEY=VALUE settings.
//
// Errors: CliErrc::kUsage (maps to Errc::kInvalidArgument) for the tools' own usage errors (bad
// record formats, escapes); the parser's are config::ConfigErrc::kUsage. Tools exit with
// kExitUsage (2) on either.
// Threading: plain values; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "rdmq/common/errors.h"
#include "rdmq/common/status.h"
#include "rdmq/config/args.h"

#define RDMQ_CLI_ERRORS(X)                                   \
  X(kUsage, kInvalidArgument, "usage error")                 \
  X(kVerificationFailed, kCorruption, "verification failed") \
  X(kBrokenPipe, kCancelled, "output closed (broken pipe)")
RDMQ_DEFINE_ERRORS(rdmq::cli, CliErrc, "cli", RDMQ_CLI_ERRORS)

namespace rdmq::cli {

// Exit codes of every rdmq tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // the operation failed (broker error, I/O, lost records)
inline constexpr int kExitUsage = 2;  // bad command line

// A usage error with `what` as its context.
Status UsageError(std::string what);

using config::CommandSpec;
using config::OptionSpec;
using config::ParsedArgs;
using config::ParseInt;
using config::ParseKeyValue;

// Turns the escapes \n \t \r \0 \\ and \xHH into bytes (for delimiters given on a command line).
Result<std::string> Unescape(std::string_view text, std::string_view what);

// An ISO 8601 date and time as milliseconds since the epoch: YYYY-MM-DD, then optionally
// THH:MM, :SS and a fraction (.f to .fffffffff, truncated to milliseconds), then optionally a
// zone: Z, +HH:MM, -HH:MM, +HHMM or +HH. Without a zone the time is UTC. A space may stand for
// the T. A usage error names `what` and the accepted form.
Result<int64_t> ParseDateTimeMs(std::string_view text, std::string_view what);

// A Status as one line for a user: "<context> (<code name>)", or the message alone.
std::string FormatError(const Status& status);

// Applies every KEY=VALUE given to the repeated option `option` (the tools' -X) with
// `config.Set`; a usage error names the pair and what Set said.
template <class Config>
Status ApplyKeyValues(const ParsedArgs& args, std::string_view option, Config& config) {
  for (const std::string& kv : args.GetAll(option)) {
    auto p = ParseKeyValue(kv, "-X");
    if (!p.ok()) return p.status();
    if (Status s = config.Set(p->first, p->second); !s.ok())
      return UsageError("-X " + kv + ": " + FormatError(s));
  }
  return Status::Ok();
}

}  // namespace rdmq::cli
