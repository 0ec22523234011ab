#include "password.h"

#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iostream>

#include "rdmq/cli/args.h"

namespace rdmq::cli::admin {
namespace {

// One line without its line ending ("\n" or "\r\n").
std::string Chomp(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// Reads one line from the terminal on standard input with echo off.
Result<std::string> Prompt(const std::string& text) {
  std::cerr << text << std::flush;
  termios saved{};
  const bool tty = tcgetattr(STDIN_FILENO, &saved) == 0;
  if (tty) {
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    (void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
  }
  std::string line;
  const bool got = static_cast<bool>(std::getline(std::cin, line));
  if (tty) (void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
  std::cerr << "\n";
  if (!got) return Status(Errc::kIoError, "no password on standard input");
  return Chomp(std::move(line));
}

}  // namespace

Result<std::string> ReadPassword(const std::string& source, const std::string& user) {
  std::string password;
  if (source == "-" && isatty(STDIN_FILENO) == 1) {
    RDMQ_ASSIGN_OR_RETURN(password, Prompt("Password for " + user + ": "));
    RDMQ_ASSIGN_OR_RETURN(std::string again, Prompt("Retype the password: "));
    if (again != password) return UsageError("the two passwords differ; nothing was changed");
  } else if (source == "-") {
    std::getline(std::cin, password);  // an empty stdin leaves it empty: refused below
    password = Chomp(std::move(password));
  } else {
    std::ifstream in(source, std::ios::binary);
    if (!in) return Status::FromErrno(errno, "cannot read the password file " + source);
    std::getline(in, password);
    password = Chomp(std::move(password));
  }
  if (password.empty()) {
    return UsageError("the password is empty (" +
                      std::string(source == "-" ? "standard input" : "the first line of " + source) +
                      " is read); an empty password is refused");
  }
  return password;
}

}  // namespace rdmq::cli::admin
