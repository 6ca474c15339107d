// ncclrr: the command-line front end. Each verb is a Command in its own cmd_*.cc file.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "command.h"

namespace ncclrr::cli {

std::vector<Command*>& CommandRegistry() {
  static std::vector<Command*> registry;
  return registry;
}

namespace {

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "ncclrr: record, check, replay and show NCCL collectives across ranks.\n\n"
               "usage:\n");
  for (const Command* c : CommandRegistry())
    std::fprintf(out, "  ncclrr %-8s %s\n", c->name(), c->synopsis());
  std::fprintf(out, "\n`ncclrr VERB --help` explains a verb.\n");
}

Command* Find(const std::string& name) {
  for (Command* c : CommandRegistry())
    if (name == c->name()) return c;
  return nullptr;
}

}  // namespace
}  // namespace ncclrr::cli

int main(int argc, char** argv) {
  using namespace ncclrr::cli;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    PrintUsage(argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitError : kExitOk;
  }
  Command* cmd = Find(argv[1]);
  if (!cmd) {
    std::fprintf(stderr, "ncclrr: unknown verb '%s'\n\n", argv[1]);
    PrintUsage(stderr);
    return kExitError;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::printf("usage: ncclrr %s %s\n\n%s\n", cmd->name(), cmd->synopsis(), cmd->help());
    return kExitOk;
  }
  try {
    return cmd->Run(args);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "ncclrr %s: %s\nusage: ncclrr %s %s\n(see `ncclrr %s --help`)\n",
                 cmd->name(), e.what(), cmd->name(), cmd->synopsis(), cmd->name());
    return kExitError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ncclrr %s: error: %s\n", cmd->name(), e.what());
    return kExitError;
  }
}
