// Command-line parsing shared by the rdmq tools (`rdmq`, `rdmq-produce`, `rdmq-consume`,
// `rdmq-demo`): one small hand-written parser, so every tool spells options, help and errors the
// same way.
//
//   CommandSpec spec{.path = "rdmq topic create", .usage = "NAME [options]", ...};
//   spec.options = {{"partitions", 'p', "N", "number of partitions"}, ...};
//   Result<ParsedArgs> args = spec.Parse(words);   // words after "rdmq topic create"
//   if (!args.ok()) { ...print FormatError(args.status()), exit kExitUsage... }
//   if (args->help()) { std::cout << spec.HelpText(); ... }
//
// Syntax accepted: `--name value`, `--name=value`, `-n value`, `-nvalue`, flags `--name` / `-n`,
// `--` ends the options (everything after is positional). Options may come before, between and
// after positional arguments. `-h` and `--help` are always flags.
//
// Errors: CliErrc::kUsage (maps to Errc::kInvalidArgument), whose context names the option or
// argument and says what is accepted; tools exit with kExitUsage (2) on it.
// Threading: plain values; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmq/common/errors.h"
#include "rdmq/common/status.h"

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

struct OptionSpec {
  std::string name = {};        // long name without the dashes: "partitions"
  char short_name = 0;          // 'p', or 0 for none
  std::string value_name = {};  // "N"; empty for a flag (takes no value)
  std::string help = {};        // one line, or several separated by '\n'
  bool repeated = false;        // may be given several times (GetAll)
};

class ParsedArgs {
 public:
  bool help() const { return help_; }
  // True if the option (by long name) was given.
  bool Has(std::string_view name) const;
  // The option's value (the last one if repeated), or nullopt.
  std::optional<std::string> Get(std::string_view name) const;
  std::string GetOr(std::string_view name, std::string fallback) const;
  // Every value of a repeated option, in command-line order.
  std::vector<std::string> GetAll(std::string_view name) const;
  // An integer option within [min, max]; `fallback` when absent. kUsage naming the option.
  Result<int64_t> GetInt(std::string_view name, int64_t fallback, int64_t min, int64_t max) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  friend struct CommandSpec;
  bool help_ = false;
  std::vector<std::pair<std::string, std::string>> values_;  // (long name, value), in order
  std::vector<std::string> positional_;
};

struct CommandSpec {
  // (Every member has a default so that designated initializers may leave any out.)
  std::string path = {};         // "rdmq topic create": used in help and error messages
  std::string usage = {};        // what follows the path in the usage line: "NAME [options]"
  std::string summary = {};      // one line
  std::string description = {};  // paragraphs shown under the usage line (may be empty)
  std::vector<OptionSpec> options = {};
  std::vector<std::string> examples = {};  // command lines, shown under "Examples:"
  size_t min_positional = 0;
  size_t max_positional = 0;
  // Lines listing subcommands ("create   Create a topic"), shown under "Commands:".
  std::vector<std::pair<std::string, std::string>> subcommands = {};

  // Parses `args` (the words after the command path). Positional-count checks are skipped when
  // help was requested.
  Result<ParsedArgs> Parse(std::span<const std::string> args) const;
  // The full --help text: usage, summary, description, commands, options, examples.
  std::string HelpText() const;
  // "see '<path> --help'" suffix for usage errors.
  std::string SeeHelp() const;
};

// Strict decimal integer parsing (optional sign, no spaces, no trailing characters, in range).
// `what` names the thing in the error ("--partitions", "offset").
Result<int64_t> ParseInt(std::string_view text, std::string_view what, int64_t min, int64_t max);
// "key=value" (the key must be non-empty; the value may be empty or contain '='). kUsage otherwise.
Result<std::pair<std::string, std::string>> ParseKeyValue(std::string_view text, std::string_view what);
// Turns the escapes \n \t \r \0 \\ and \xHH into bytes (for delimiters given on a command line).
Result<std::string> Unescape(std::string_view text, std::string_view what);

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
