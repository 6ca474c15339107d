#pragma once
// One CLI verb = one Command. Verbs register themselves with NCCLRR_REGISTER_COMMAND; main.cc
// dispatches. Commands return the process exit code; they may throw UsageError for bad flags
// (exit 2 with the message and a pointer to --help).
#include <stdexcept>
#include <string>
#include <vector>

#include "ncclrr/base/args.h"

namespace ncclrr::cli {

using ncclrr::UsageError;

class Command {
 public:
  virtual ~Command() = default;
  virtual const char* name() const = 0;
  virtual const char* synopsis() const = 0;  // one line, after the verb
  virtual const char* help() const = 0;      // a paragraph
  virtual int Run(const std::vector<std::string>& args) = 0;
};

std::vector<Command*>& CommandRegistry();

template <typename T>
struct CommandRegistrar {
  CommandRegistrar() {
    static T instance;
    CommandRegistry().push_back(&instance);
  }
};

#define NCCLRR_REGISTER_COMMAND(Class) \
  static ::ncclrr::cli::CommandRegistrar<Class> g_register_##Class

// Exit codes shared by the verbs (docs/design.md's CLI contract).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitError = 2;

}  // namespace ncclrr::cli
