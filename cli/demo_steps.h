#pragma once
// Helpers for `ncclrr demo`: run a sibling program of this executable, capture its output and
// exit status, and show a few lines of it under a heading.
#include <string>
#include <vector>

namespace ncclrr::cli {

struct StepResult {
  int status = -1;     // exit code, 128+N for signal N, -1 when it could not run
  std::string output;  // stdout and stderr together
};

// Directory of the running executable (build/bin or <prefix>/bin).
std::string SelfDir();
// Runs argv (argv[0] a path), with `env` added to the environment; output captured.
StepResult RunCaptured(const std::vector<std::string>& argv,
                       const std::vector<std::string>& env = {});
// Prints the lines of `text` that contain any of `keep` (all when empty), at most `max` of
// them, each indented.
void PrintLines(const std::string& text, const std::vector<std::string>& keep, size_t max);
// First line of `text` containing `needle`, or "".
std::string FindLine(const std::string& text, const std::string& needle);

}  // namespace ncclrr::cli
