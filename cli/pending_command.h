#pragma once
// A verb of the CLI contract whose implementation has not landed yet: it says so and exits 2,
// so scripts can tell "not available" from a verdict.
#include <cstdio>

#include "command.h"

namespace ncclrr::cli {

template <const char* kName, const char* kSynopsis, const char* kWhat>
class PendingCommand : public Command {
 public:
  const char* name() const override { return kName; }
  const char* synopsis() const override { return kSynopsis; }
  const char* help() const override { return kWhat; }
  int Run(const std::vector<std::string>&) override {
    std::fprintf(stderr, "ncclrr %s: not available in this build yet (%s)\n", kName, kWhat);
    return kExitError;
  }
};

#define NCCLRR_PENDING_COMMAND(Id, verb, syn, what)               \
  namespace pending_##Id {                                        \
    inline constexpr char kName[] = verb;                         \
    inline constexpr char kSyn[] = syn;                           \
    inline constexpr char kWhat[] = what;                         \
    using Id = ::ncclrr::cli::PendingCommand<kName, kSyn, kWhat>; \
    NCCLRR_REGISTER_COMMAND(Id);                                  \
  }

}  // namespace ncclrr::cli
