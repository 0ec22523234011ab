// Reading a password for `rdmq user add|passwd` (docs/cli.md, "rdmq user"): the first line of a
// file, or of standard input ("-"). When standard input is a terminal the user is prompted on
// standard error, without echo, and asked to type it twice.
//
// Errors: CliErrc::kUsage for an empty password or two entries that differ, kIoError (naming the
// file) when it cannot be read.
// Threading: called once from main's thread (it changes the terminal's echo while it reads).
#pragma once

#include <string>

#include "rdmq/common/status.h"

namespace rdmq::cli::admin {

// `source`: a file path, or "-" for standard input. `user` names the user in the prompt.
Result<std::string> ReadPassword(const std::string& source, const std::string& user);

}  // namespace rdmq::cli::admin
