// The command-line parser of every rdmq tool (rdmq, rdmq-produce, rdmq-consume, rdmq-demo,
// rdmq-broker, the benchmarks, the examples): one small parser, so every tool spells options,
// help and errors the same way.
//
//   CommandSpec spec{.path = "rdmq topic create", .usage = "NAME [options]", ...};
//   spec.options = {{"partitions", 'p', "N", "number of partitions"}, ...};
//   Result<ParsedArgs> args = spec.Parse(words);   // words after "rdmq topic create"
//   if (!args.ok()) { ...print the error's context, exit 2... }
//   if (args->help()) { std::cout << spec.HelpText(); ... }
//
// Syntax accepted: `--name value`, `--name=value`, `-n value`, `-nvalue`, flags `--name` / `-n`,
// `--` ends the options (everything after is positional). Options may come before, between and
// after positional arguments. `-h` and `--help` are always flags.
//
// Errors: ConfigErrc::kUsage (maps to Errc::kInvalidArgument), whose context names the option or
// argument, says what is accepted and points to --help.
// Threading: plain values; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/config/key.h"

namespace rdmq::config {

// A usage error (ConfigErrc::kUsage) with `what` as its context.
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
  // A decimal number (fractions allowed) within [min, max]; `fallback` when absent.
  Result<double> GetDouble(std::string_view name, double fallback, double min, double max) const;
  // Every option given, (long name, value) in command-line order (flags have value "").
  const std::vector<std::pair<std::string, std::string>>& values() const { return values_; }
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
  // A block shown after the options under "<settings_title>:" (a tool's config keys, from
  // RenderKeysText), or nothing.
  std::string settings_title = "Settings";
  std::string settings = {};

  // Parses `args` (the words after the command path). Positional-count checks are skipped when
  // help was requested.
  Result<ParsedArgs> Parse(std::span<const std::string> args) const;
  // The full --help text: usage, summary, description, commands, options, settings, examples.
  std::string HelpText() const;
  // "see '<path> --help'" suffix for usage errors.
  std::string SeeHelp() const;
};

// The usual start of a tool's main(): parses `args` (argv after the program name, or after a
// subcommand). On --help prints HelpText() to stdout and sets *exit_code to 0; on a usage error
// prints "<path>: <what>" to stderr and sets *exit_code to 2; both return nullopt.
std::optional<ParsedArgs> ParseCommandLine(const CommandSpec& spec, std::span<const std::string> args,
                                           int* exit_code);
std::optional<ParsedArgs> ParseCommandLine(const CommandSpec& spec, int argc, char** argv, int* exit_code);

// Strict decimal integer parsing (optional sign, no spaces, no trailing characters, in range).
// `what` names the thing in the error ("--partitions", "offset").
Result<int64_t> ParseInt(std::string_view text, std::string_view what, int64_t min, int64_t max);
// "key=value" (the key must be non-empty; the value may be empty or contain '='). kUsage otherwise.
Result<std::pair<std::string, std::string>> ParseKeyValue(std::string_view text, std::string_view what);

}  // namespace rdmq::config
