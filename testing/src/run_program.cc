#include "ncclrr/testing/run_program.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

namespace ncclrr::testing {

CommandResult RunShell(const std::string& command) {
  CommandResult r;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string TestProgram(const std::string& name) {
  const char* bin = std::getenv("NCCLRR_TEST_BIN");
  return std::string(bin != nullptr && *bin != '\0' ? bin : "build/bin") + "/" + name;
}

CommandResult RunNcclrr(const std::string& args, bool with_stderr) {
  return RunShell(TestProgram("ncclrr") + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

}  // namespace ncclrr::testing
