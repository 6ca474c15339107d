// `ncclrr demo`: the motivating bug end to end. Until capture lands, the trace comes from the
// synthetic generator: two ranks, four same-size-ish allreduces per step, rank 1 swapping two
// same-size gradients in steps 1 and 3 (TensorFlow's nccl_ops.all_sum bug).
#include <cstdio>
#include <filesystem>

#include "args.h"
#include "command.h"
#include "ncclrr/synthetic_trace.h"

namespace ncclrr::cli {
namespace {

int RunVerb(const std::string& verb, const std::vector<std::string>& args) {
  for (Command* c : CommandRegistry())
    if (verb == c->name()) return c->Run(args);
  return kExitError;
}

class DemoCommand : public Command {
 public:
  const char* name() const override { return "demo"; }
  const char* synopsis() const override { return "[--backend host|nccl] [-o DIR]"; }
  const char* help() const override {
    return "Runs the motivating bug end to end: two ranks issue two same-size allreduces in\n"
           "different orders in some steps. Writes the trace to DIR (default ./ncclrr-demo).";
  }
  int Run(const std::vector<std::string>& raw) override {
    Args args("demo", raw);
    args.Option("--backend").Option("-o");
    args.Parse();
    const std::string backend = args.GetOr("--backend", "host");
    if (backend != "host" && backend != "nccl")
      throw UsageError("--backend must be host or nccl, got '" + backend + "'");
    const std::string dir = args.GetOr("-o", "ncclrr-demo");
    std::error_code ec;
    std::filesystem::remove_all(dir + "/synthetic", ec);

    std::printf(
        "== 1. record: a 2-rank training loop whose rank 1 swaps two same-size "
        "allreduces in steps 1 and 3\n");
    SyntheticTraceOptions o;
    o.dir = dir + "/synthetic";
    o.counts = {1728, 36864, 36864, 512};
    o.swap_rank = 1;
    o.swap_index = 1;
    o.swap_steps = {1, 3};
    auto r = WriteSyntheticTrace(o);
    if (!r.ok()) {
      std::fprintf(stderr, "ncclrr demo: %s\n", r.status().message().c_str());
      return kExitError;
    }
    std::printf("   wrote %llu calls into %s (synthetic generator)\n\n",
                static_cast<unsigned long long>(r->calls), o.dir.c_str());
    std::printf("== 2. info\n");
    std::fflush(stdout);
    if (int rc = RunVerb("info", {o.dir}); rc != kExitOk) return rc;
    std::printf("\n== 3. dump (rank 1, stable form)\n");
    std::fflush(stdout);
    return RunVerb("dump", {o.dir, "--rank", "1", "--stable"});
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(DemoCommand);
}  // namespace ncclrr::cli
