#pragma once
// Running the programs under test as a user would, and reading what they print.
#include <string>

namespace ncclrr::testing {

struct CommandResult {
  int code = -1;  // the exit status; -1 when it could not run or was killed by a signal
  std::string out;
};

// Runs `command` with /bin/sh and returns its status and standard output (redirect stderr in
// the command to see it: "... 2>&1").
CommandResult RunShell(const std::string& command);

// The path of a program the build made: $NCCLRR_TEST_BIN/<name>, or build/bin/<name>.
std::string TestProgram(const std::string& name);

// `ncclrr ARGS`, with its stderr in `out` too when `with_stderr`, else dropped.
CommandResult RunNcclrr(const std::string& args, bool with_stderr = false);

}  // namespace ncclrr::testing
